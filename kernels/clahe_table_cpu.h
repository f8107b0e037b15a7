// SPDX-License-Identifier: MIT
/*
 * clahe_table_cpu.h: the table of one CLAHE tile on the CPU (clahe_table_cpu.c), from the tile's
 * histogram kept as two halves (the counts of its even and of its odd pixels: two counters
 * per bin break the chains of increments to one bin that smooth images make). The result is
 * exactly dh_eq_lut_build's over the summed histogram with the window of all bins, the same
 * clip limit and redistribution, computed without a division per bin: the divisions of the
 * redistribution are hoisted out of the loop and the equalization's one division, whose divisor
 * is fixed for the tile, is a multiply and shift (divide_exact.h).
 */
#ifndef DH_KERNELS_CLAHE_TABLE_CPU_H
#define DH_KERNELS_CLAHE_TABLE_CPU_H

#include <stdint.h>

/* table[b] for b < bins from the counts h0[b] + h1[b], which are zero outside bins lo .. hi
 * (lo > hi: all zero), so that only those are read: a tile's values cover a fraction of 65536
 * bins. A histogram with no count is taken as flat (every bin 1), as clahe_cpu.c defines an
 * empty tile. The total count must be below 2^32; levels 2..65536, clip_limit >= 0 as
 * dh_eq_lut_build's. h0 is also scratch: its entries lo .. hi may be overwritten (the caller
 * zeroes them for the next tile anyway). */
void dh_clahe_table_from_halves(uint32_t *h0, const uint32_t *h1, uint32_t bins,
                                uint32_t lo, uint32_t hi, uint32_t levels, double clip_limit,
                                uint16_t *table);

#endif /* DH_KERNELS_CLAHE_TABLE_CPU_H */
