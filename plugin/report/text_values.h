/* SPDX-License-Identifier: MIT */
/*
 * text_values.h: values as the hosts read them from text (command-line options, REST query
 * arguments and JSON strings), parsed strictly and the same way everywhere: whole numbers,
 * finite decimals, "A:B" pairs and "LO:HI" ranges, and the window specifications of equalize
 * and window.
 */
#ifndef DH_TEXT_VALUES_H
#define DH_TEXT_VALUES_H

#include <stdint.h>

#include "dicomhist.h"

/* A whole decimal integer in [min, max]; returns 0, or -1 when the text is not one. */
int text_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *out);
/* A finite decimal number and nothing else (no spaces, no hex, no inf or nan); returns 0 or -1. */
int text_parse_double(const char *text, double *out);
/* "A:B" with two finite numbers (any order); returns 0, or -1 when the text is not that. */
int text_parse_pair(const char *text, double *a, double *b);
/* "LO:HI" with two finite numbers and LO < HI; returns 0, or -1 with a reason in *why. */
int text_parse_range(const char *text, double *lo, double *hi, const char **why);
/* "LO:HI" in whole stored values within -32768..65535, at most 65536 apart, LO < HI (an
 * inclusive range of mutual information); returns 0, or -1 with a reason in *why. */
int text_parse_stored_range(const char *text, int32_t *lo, int32_t *hi, const char **why);
/* A window: "C:W" (center and width, W >= 1), "file", "minmax" or "percentile:P"
 * (0 <= P < 50), into p->window and its fields; returns 0, or -1 with a reason in *why. */
int text_parse_window(const char *text, dh_equalize_params *p, const char **why);
/* CLAHE's tiles or tile size per axis: "N", "NxM" or "NxMxK", each 1..65535, at least min_axes
 * of them, into out[0..2] (the axes not named are left as they are) and how many into *count;
 * returns 0, or -1 when the text is anything else. */
int text_parse_axes(const char *text, int min_axes, uint32_t out[3], uint32_t *count);

#endif /* DH_TEXT_VALUES_H */
