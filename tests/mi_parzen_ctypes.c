// SPDX-License-Identifier: MIT
/*
 * mi_parzen_ctypes.c: the Parzen MI CPU twin exported from a small module for the Python tests
 * (ctypes), which compare it with SimpleITK before the public API carries it. The library builds
 * with hidden visibility, so the one entry point is re-exported here under a test name.
 */
#include "mi_parzen.h"

__attribute__((visibility("default"))) int
dh_test_parzen_mi(const dh_parzen_params *params, size_t pixels, const dh_parzen_image *fixed,
                  const dh_parzen_image *moving, uint32_t count, dh_mi_values *out,
                  float *gradient)
{
    return dh_parzen_mi_cpu(params, pixels, fixed, moving, count, out, gradient);
}
