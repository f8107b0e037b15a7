// SPDX-License-Identifier: MIT
/* parzen_test_data.c: see parzen_test_data.h. */
#include "parzen_test_data.h"

#include <math.h>
#include <stdlib.h>

#include "dicomhist.h"
#include "test_support.h"

void *dh_parzen_test_images(int sample_type, size_t n, uint64_t seed, size_t nan_every)
{
    uint16_t *ct = malloc(n * sizeof *ct);
    ck_assert_ptr_nonnull(ct);
    dh_test_fill_ct_like(ct, n, seed);
    if (sample_type == DH_SAMPLE_UINT16)
        return ct;
    void *out = malloc(n * (sample_type == DH_SAMPLE_FLOAT32 ? 4 : 2));
    ck_assert_ptr_nonnull(out);
    for (size_t k = 0; k < n; k++) {
        if (sample_type == DH_SAMPLE_FLOAT32)
            ((float *)out)[k] = k % nan_every == 5 ? NAN : (float)ct[k] / 4095.0f;
        else
            ((int16_t *)out)[k] = (int16_t)((int)ct[k] - 1024);
    }
    free(ct);
    return out;
}

uint8_t *dh_parzen_test_mask(size_t n, uint64_t seed, uint32_t one_in)
{
    uint8_t *mask = malloc(n);
    ck_assert_ptr_nonnull(mask);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t k = 0; k < n; k++)
        mask[k] = dh_test_rng_below(&rng, one_in) != 0;
    return mask;
}
