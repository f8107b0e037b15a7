// SPDX-License-Identifier: MIT
/*
 * bench_clahe_floor.c: the floor under any exact CLAHE of a 16-bit image on one core
 * (bench_clahe_floor.h): (a) the bare read and write of the image (memcpy), (b) the plain
 * histogram of the whole image at 4096 bins (the value's top 12 bits) and at 65536, with one and
 * four tables of 32-bit counters (pixel i counts into table i mod 4, so runs of one value do not
 * wait on one counter; at 65536 also two), and at 4096 bins with four tables of 16-bit counters
 * (32 KiB, the size of a level-1 data cache) flushed into 32-bit totals before any can overflow,
 * (c) the one-table lookup out = lut[in], with a 65536-entry table and with a 4096-entry table
 * indexed by the top 12 bits, scalar, by 8-lane AVX2 gathers and by 16-lane AVX-512 ones (where
 * the processor has them), and the AVX-512 gather of one 8-byte entry per sample. Each
 * is the fastest of the runs, in processor time. Every result is folded into a printed checksum
 * so no loop can be dropped.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_clahe_floor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_cpu_common.h"

/* One plain histogram: `tables` tables of 65536 >> shift counters (zeroed here, inside the
 * timing, as a histogram must be), summed into the first at the end. Returns a checksum. */
static uint64_t histogram(const uint16_t *img, size_t n, uint32_t *h, int shift, int tables)
{
    const size_t bins = (size_t)65536 >> shift;
    memset(h, 0, (size_t)tables * bins * sizeof *h);
    size_t i = 0;
    if (tables == 2) {
        uint32_t *h1 = h + bins;
        for (; i + 2 <= n; i += 2) {
            h[img[i] >> shift]++;
            h1[img[i + 1] >> shift]++;
        }
        for (size_t b = 0; b < bins; b++)
            h[b] += h1[b];
    } else if (tables == 4) {
        uint32_t *h1 = h + bins, *h2 = h1 + bins, *h3 = h2 + bins;
        for (; i + 4 <= n; i += 4) {
            h[img[i] >> shift]++;
            h1[img[i + 1] >> shift]++;
            h2[img[i + 2] >> shift]++;
            h3[img[i + 3] >> shift]++;
        }
        for (size_t b = 0; b < bins; b++)
            h[b] += h1[b] + h2[b] + h3[b];
    }
    for (; i < n; i++)
        h[img[i] >> shift]++;
    return h[img[0] >> shift] + h[img[n / 2] >> shift];
}

/* Four tables of 16-bit counters at 4096 bins, flushed into h (32-bit) every 4 x 65535 pixels
 * (so no counter passes 65535). */
static uint64_t histogram16(const uint16_t *img, size_t n, uint32_t *h, uint16_t *h16)
{
    const size_t bins = 4096, chunk = (size_t)4 * 65535;
    memset(h, 0, bins * sizeof *h);
    for (size_t start = 0; start < n; start += chunk) {
        const size_t end = n - start < chunk ? n : start + chunk;
        memset(h16, 0, 4 * bins * sizeof *h16);
        uint16_t *h1 = h16 + bins, *h2 = h1 + bins, *h3 = h2 + bins;
        size_t i = start;
        for (; i + 4 <= end; i += 4) {
            h16[img[i] >> 4]++;
            h1[img[i + 1] >> 4]++;
            h2[img[i + 2] >> 4]++;
            h3[img[i + 3] >> 4]++;
        }
        for (; i < end; i++)
            h16[img[i] >> 4]++;
        for (size_t b = 0; b < bins; b++)
            h[b] += (uint32_t)h16[b] + h1[b] + h2[b] + h3[b];
    }
    return h[img[0] >> 4] + h[img[n / 2] >> 4];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FLOOR_X86 1
/* out = lut32[in >> shift] by 8-lane AVX2 gathers from a table of 32-bit entries. */
__attribute__((target("avx2"))) static uint64_t lookup_gather(const uint16_t *img, size_t n,
                                                              const int32_t *lut32, int shift,
                                                              uint16_t *out)
{
    const __m128i by = _mm_cvtsi32_si128(shift);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(img + i)));
        __m256i e = _mm256_i32gather_epi32(lut32, _mm256_srl_epi32(v, by), 4);
        _mm_storeu_si128((__m128i *)(out + i), _mm_packus_epi32(_mm256_castsi256_si128(e),
                                                                _mm256_extracti128_si256(e, 1)));
    }
    for (; i < n; i++)
        out[i] = (uint16_t)lut32[img[i] >> shift];
    return out[0] + out[n / 2] + out[n - 1];
}

#define FLOOR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
/* The same by 16-lane AVX-512 gathers (vpgatherdd), the tail under a mask. */
FLOOR_AVX512 static uint64_t lookup_gather512(const uint16_t *img, size_t n, const int32_t *lut32,
                                              int shift, uint16_t *out)
{
    const __m128i by = _mm_cvtsi32_si128(shift);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, img + i));
        const __m512i e = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m,
                                                      _mm512_srl_epi32(v, by), lut32, 4);
        _mm256_mask_storeu_epi16(out + i, m, _mm512_cvtepi32_epi16(e));
    }
    return out[0] + out[n / 2] + out[n - 1];
}

/* out = the low 16 bits of quads[in], 64-bit entries by two 8-lane gathers (vpgatherdq) per 16
 * samples: what the AVX-512 blend's fetch of one quad a pixel costs at least. */
FLOOR_AVX512 static uint64_t quad_gather512(const uint16_t *img, size_t n, const uint64_t *quads,
                                            uint16_t *out)
{
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, img + i));
        const __m512i zero = _mm512_setzero_si512();
        const __m512i a = _mm512_mask_i32gather_epi64(zero, (__mmask8)m, _mm512_castsi512_si256(v),
                                                      (const long long *)quads, 8);
        const __m512i b = _mm512_mask_i32gather_epi64(zero, (__mmask8)(m >> 8),
                                                      _mm512_extracti64x4_epi64(v, 1),
                                                      (const long long *)quads, 8);
        _mm_mask_storeu_epi16(out + i, (__mmask8)m, _mm512_cvtepi64_epi16(a));
        _mm_mask_storeu_epi16(out + i + 8, (__mmask8)(m >> 8), _mm512_cvtepi64_epi16(b));
    }
    return out[0] + out[n / 2] + out[n - 1];
}
#endif

static uint64_t lookup(const uint16_t *img, size_t n, const uint16_t *lut, int shift,
                       uint16_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = lut[img[i] >> shift];
    return out[0] + out[n / 2] + out[n - 1];
}

static uint64_t copy(const uint16_t *img, size_t n, uint16_t *out)
{
    memcpy(out, img, n * sizeof *out);
    return out[0] + out[n / 2] + out[n - 1];
}

/* In the order of what the processor needs: none, AVX2, AVX-512. */
enum measure { COPY, HIST_4096_1, HIST_4096_4, HIST_4096_4_16, HIST_65536_1, HIST_65536_2, HIST_65536_4,
               LUT_65536, LUT_4096, GATHER_65536, GATHER_4096, GATHER512_65536, GATHER512_4096,
               QUAD512_65536, MEASURES };

static const char *const names[MEASURES] = {
    "copy", "hist4096x1", "hist4096x4", "hist4096x4_16bit", "hist65536x1", "hist65536x2", "hist65536x4",
    "lut65536", "lut4096", "lut65536_gather", "lut4096_gather", "lut65536_gather512",
    "lut4096_gather512", "quad65536_gather512"};

/* The scratch every measure may use. */
typedef struct floor_tables {
    uint32_t *h;
    uint16_t *h16;
    const uint16_t *lut;
    const int32_t *lut32;
    const uint64_t *quads;
} floor_tables;

/* The measures this processor runs: up to the AVX2 ones, or all. */
static int measures_here(void)
{
#ifdef FLOOR_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return MEASURES;
    return __builtin_cpu_supports("avx2") ? GATHER512_65536 : GATHER_65536;
#else
    return GATHER_65536;
#endif
}

static uint64_t measure_once(enum measure m, const uint16_t *img, size_t n,
                             const floor_tables *t, uint16_t *out)
{
    uint32_t *h = t->h;
    const uint16_t *lut = t->lut;
    switch (m) {
    case COPY: return copy(img, n, out);
    case HIST_4096_1: return histogram(img, n, h, 4, 1);
    case HIST_4096_4: return histogram(img, n, h, 4, 4);
    case HIST_4096_4_16: return histogram16(img, n, h, t->h16);
    case HIST_65536_1: return histogram(img, n, h, 0, 1);
    case HIST_65536_2: return histogram(img, n, h, 0, 2);
    case HIST_65536_4: return histogram(img, n, h, 0, 4);
    case LUT_65536: return lookup(img, n, lut, 0, out);
    case LUT_4096: return lookup(img, n, lut, 4, out);
#ifdef FLOOR_X86
    case GATHER_65536: return lookup_gather(img, n, t->lut32, 0, out);
    case GATHER_4096: return lookup_gather(img, n, t->lut32, 4, out);
    case GATHER512_65536: return lookup_gather512(img, n, t->lut32, 0, out);
    case GATHER512_4096: return lookup_gather512(img, n, t->lut32, 4, out);
    case QUAD512_65536: return quad_gather512(img, n, t->quads, out);
#endif
    default: return 0;
    }
}

int bench_clahe_floor(const uint16_t *img, uint16_t *out, size_t n, int reps)
{
    uint32_t *h = malloc(4 * (size_t)65536 * sizeof *h);
    uint16_t *h16 = malloc(4 * (size_t)4096 * sizeof *h16);
    uint16_t *lut = malloc(65536 * sizeof *lut);
    int32_t *lut32 = malloc(65536 * sizeof *lut32);
    uint64_t *quads = malloc(65536 * sizeof *quads);
    int rc = !h || !h16 || !lut || !lut32 || !quads;
    /* A table like an equalization's: every entry different from its index. */
    for (uint32_t v = 0; v < 65536 && !rc; v++) {
        lut32[v] = lut[v] = (uint16_t)(65535 - (v * 7 + 13) % 65536);
        quads[v] = 0x0123456789ab0000ull | lut[v];
    }
    const floor_tables t = {h, h16, lut, lut32, quads};
    const int measures = rc ? 0 : measures_here();
    uint64_t check = 0;
    double best[MEASURES];
    for (int m = 0; m < measures; m++)
        best[m] = 1e30;
    /* Measures interleaved run by run, so a shared machine's load falls on all alike; one
     * untimed round first (pages and caches in). */
    for (int r = -1; r < reps; r++)
        for (int m = 0; m < measures; m++) {
            double t0 = bench_cpu_seconds();
            check += measure_once((enum measure)m, img, n, &t, out);
            double t = bench_cpu_seconds() - t0;
            if (r >= 0 && t < best[m])
                best[m] = t;
        }
    for (int m = 0; m < measures; m++)
        printf("%s %.3f\n", names[m], best[m] * 1e3);
    if (!rc)
        printf("checksum %llu\n", (unsigned long long)check);
    free(h);
    free(h16);
    free(lut);
    free(lut32);
    free(quads);
    return rc;
}
