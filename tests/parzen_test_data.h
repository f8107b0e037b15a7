// SPDX-License-Identifier: MIT
/*
 * parzen_test_data.h: the images and masks the Parzen MI API tests (host and device) score:
 * CT-like values as uint16, int16 (shifted by -1024) or float32 (scaled to about 0..1, with a
 * NaN every `nan_every` pixels), and random masks.
 */
#ifndef DH_TESTS_PARZEN_TEST_DATA_H
#define DH_TESTS_PARZEN_TEST_DATA_H

#include <stddef.h>
#include <stdint.h>

/* n samples of a dh_sample_type (malloc'ed, asserted); free() them. */
void *dh_parzen_test_images(int sample_type, size_t n, uint64_t seed, size_t nan_every);
/* n mask bytes, each 0 with probability 1 / one_in (malloc'ed); free() them. */
uint8_t *dh_parzen_test_mask(size_t n, uint64_t seed, uint32_t one_in);

#endif /* DH_TESTS_PARZEN_TEST_DATA_H */
