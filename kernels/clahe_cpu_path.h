// SPDX-License-Identifier: MIT
/*
 * clahe_cpu_path.h: which build of CLAHE's CPU twin runs (clahe_cpu_path.c). The twin's two hot
 * pieces, the row blend (clahe_rows_cpu.h) and a tile's table (clahe_table_cpu.h), have builds
 * for instruction sets the library is not compiled for (it stays x86-64 baseline or portable C)
 * and choose one at run time. Every build gives the same bits; the tests compare each with the
 * definitions, and the environment variable DH_CLAHE_CPU_PATH lets them, and a benchmark, force a
 * slower one: portable, avx2, avx512-loads or avx512. A name the processor cannot run is capped
 * to the fastest it can (never an illegal instruction); an unknown name is ignored.
 */
#ifndef DH_KERNELS_CLAHE_CPU_PATH_H
#define DH_KERNELS_CLAHE_CPU_PATH_H

/* The builds, in the order of preference (the fastest last): portable C; AVX2 and FMA, 8 pixels
 * a step; AVX-512 (F, BW, VL, DQ) with the quads fetched by scalar loads, and with them fetched
 * by gathers, 16 pixels a step. */
typedef enum dh_clahe_path {
    DH_CLAHE_PATH_PORTABLE,
    DH_CLAHE_PATH_AVX2,
    DH_CLAHE_PATH_AVX512_LOADS,
    DH_CLAHE_PATH_AVX512,
    DH_CLAHE_PATHS
} dh_clahe_path;

/* The fastest build this processor runs, capped by DH_CLAHE_CPU_PATH when it names one. */
dh_clahe_path dh_clahe_cpu_path(void);

/* The build DH_CLAHE_CPU_PATH names, or DH_CLAHE_PATHS when it is unset or names none. */
dh_clahe_path dh_clahe_cpu_path_asked(void);

/* The name of a build, as DH_CLAHE_CPU_PATH takes it ("?" for none). */
const char *dh_clahe_path_name(dh_clahe_path path);

#endif /* DH_KERNELS_CLAHE_CPU_PATH_H */
