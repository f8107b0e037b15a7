// SPDX-License-Identifier: MIT
/*
 * bench_host_loop.c: the host cost of the library's device calls from a tiny C loop, no Python
 * between the calls (issue 22's split of a Python call's host cost: the C extension's entry
 * against ctypes against this). bench_mi_python.py --host-cost loads it with ctypes and passes
 * the functions' addresses (taken from dicomhist._core, which exports the C API), the handles
 * and device buffers its C-call rows use; each function here makes `reps` back-to-back calls
 * and returns this thread's CPU time per call in microseconds (the caller synchronizes the GPU
 * before, so the launches enqueue on an empty queue, as in the Python rows), or -1 when a call
 * fails. Only a benchmark's helper: built as a small shared library with no dependency.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_THREAD_CPUTIME_ID under -std=c11 */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dicomhist.h"

typedef dh_status (*signed_fn)(dh_ctx *, dh_parzen_mi *, size_t, const void *, int,
                               const uint8_t *, const void *, int, const uint8_t *, uint32_t,
                               void *, double, double *, float *);
typedef dh_status (*mi_device_fn)(dh_ctx *, dh_mi_fixed *, const void *, int, size_t, uint32_t,
                                  const uint8_t *, size_t, void *, dh_mi_scores *);

static double thread_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* dh_parzen_mi_evaluate_device_signed, reps times with the same arguments (DH_API: exported
 * from this library, whose build hides symbols by default). */
DH_API double dh_bench_loop_parzen_signed(void *fn, dh_ctx *ctx, dh_parzen_mi *parzen,
                                          size_t pixels, const void *fixed, int fixed_type,
                                          const void *moving, int moving_type, uint32_t count,
                                          void *stream, double sign, double *values,
                                          float *gradient, int reps)
{
    const signed_fn call = (signed_fn)fn;
    const double t0 = thread_us();
    for (int i = 0; i < reps; i++)
        if (call(ctx, parzen, pixels, fixed, fixed_type, NULL, moving, moving_type, NULL, count,
                 stream, sign, values, gradient) != DH_OK)
            return -1.0;
    return (thread_us() - t0) / reps;
}

/* dh_mi_evaluate_device, reps times with the same arguments. */
DH_API double dh_bench_loop_mi_device(void *fn, dh_ctx *ctx, dh_mi_fixed *fixed,
                                      const void *moving, int sample_type, size_t stride,
                                      uint32_t count, void *stream, dh_mi_scores *out, int reps)
{
    const mi_device_fn call = (mi_device_fn)fn;
    const double t0 = thread_us();
    for (int i = 0; i < reps; i++)
        if (call(ctx, fixed, moving, sample_type, stride, count, NULL, 0, stream, out) != DH_OK)
            return -1.0;
    return (thread_us() - t0) / reps;
}
