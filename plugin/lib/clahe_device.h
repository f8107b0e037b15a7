// SPDX-License-Identifier: MIT
/*
 * clahe_device.h: CLAHE of host samples on the GPU for dh_equalize (clahe_device.c, only built
 * with CUDA): the samples go up once, kernels/clahe_cuda.h computes, the result comes down.
 */
#ifndef DH_LIB_CLAHE_DEVICE_H
#define DH_LIB_CLAHE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "clahe_cpu.h"

/* dh_clahe_cpu's arguments and result (host memory), computed by dh_clahe_cuda. Returns 0, or
 * -1 with a message (CUDA's own text included) in msg. */
int dh_clahe_device(const void *data, int is_signed, int32_t base, uint32_t len,
                    const dh_clahe_shape *shape, const dh_eq_window *windows, uint32_t bins,
                    uint32_t levels, double clip_limit, uint16_t *out, char *msg,
                    size_t msg_len);

#endif /* DH_LIB_CLAHE_DEVICE_H */
