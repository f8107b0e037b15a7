// SPDX-License-Identifier: MIT
/*
 * test_clahe_cuda_blend.c: the row-factored 3D blend of kernels/clahe_cuda_blend.h, which the
 * GPU's volume mapping uses, equals clahe.h's dh_clahe_blend3 (the definition) on the CPU, where
 * the same code compiles: random voxels of every axis shape the bound admits (up to its edge,
 * 2 den_x den_y den_z just below 2^32 and den_y den_z = 65536), table entries 0, 65535 and
 * between, and blends that land exactly on a half (where the float estimate is closest to
 * being one too low). Runs everywhere (no GPU needed), so the arithmetic is checked in CI.
 * The estimate's floor from the bits of a rounded-down fused multiply-add and the 32-bit
 * remainder (session 20) are checked at the edges of the bound: den = 2^31 - 2^15 (the largest
 * the bound admits), den = 2^30, exact halves, entries 0 and 65535.
 */
#include "clahe_cuda_blend.h"
#include "test_support.h"

static uint32_t entry(dh_test_rng *rng)
{
    uint32_t r = dh_test_rng_below(rng, 4);
    return r == 0 ? 0 : r == 1 ? 65535 : dh_test_rng_below(rng, 65536);
}

/* The largest denominator of an axis of n pixels in `tiles` (what the GPU twin checks). */
static uint64_t max_den(uint32_t n, uint32_t tiles)
{
    uint64_t m = 1;
    for (uint32_t i = 0; i + 2 <= tiles; i++) {
        uint64_t d = (uint64_t)dh_clahe_tile_start(n, tiles, i + 2) -
                     dh_clahe_tile_start(n, tiles, i);
        m = d > m ? d : m;
    }
    return m;
}

/* One voxel through both blends; the entries as the mapping gathers them. */
static void check_voxel(dh_clahe_axis_weight ax, dh_clahe_axis_weight ay,
                        dh_clahe_axis_weight az, const uint32_t t[8])
{
    const dh_clahe_yz yz = dh_clahe_yz_of(ay, az);
    const dh_clahe_span sp = dh_clahe_span_of(ax.den, yz.den);
    const uint32_t w0 = ax.den - ax.w1;
    const uint16_t want = dh_clahe_blend3(ax, ay, az, t);
    uint32_t q[4]; /* as a quad holds them */
    for (int k = 0; k < 4; k++)
        q[k] = t[2 * k] | t[2 * k + 1] << 16;
    const uint16_t got = dh_clahe_blend3_row(w0, ax.w1, (float)w0, (float)ax.w1, sp, yz, q);
    if (want != got)
        ck_abort_msg("weights %u/%u, %u/%u, %u/%u, entries %u %u %u %u %u %u %u %u: %u, row "
                     "blend %u",
                     ax.w1, ax.den, ay.w1, ay.den, az.w1, az.den, t[0], t[1], t[2], t[3], t[4],
                     t[5], t[6], t[7], want, got);
}

START_TEST(row_blend_equals_the_exact_rounding)
{
    /* (n, tiles) per axis: the benchmark's 512 / 8, odd and tiny grids, one tile, spans up to
     * the bound's edge (65535 / 2 gives den 65535 on x; 512 / 2 gives 512 on y and z, 2^18). */
    static const uint32_t axes[][2] = {{512, 8}, {53, 7},  {41, 9}, {6, 3},     {1, 1},
                                       {3000, 8}, {97, 8}, {33, 8}, {65535, 2}, {512, 2},
                                       {256, 2},  {2, 2},  {7, 3},  {65535, 1}, {600, 1}};
    const size_t na = sizeof axes / sizeof *axes;
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 1621);
    int checked = 0;
    for (int k = 0; k < 600000; k++) {
        const uint32_t *a = axes[dh_test_rng_below(&rng, (uint32_t)na)];
        const uint32_t *b = axes[dh_test_rng_below(&rng, (uint32_t)na)];
        const uint32_t *c = axes[dh_test_rng_below(&rng, (uint32_t)na)];
        if (!dh_clahe_blend3_row_ok(max_den(a[0], a[1]), max_den(b[0], b[1]),
                                    max_den(c[0], c[1])))
            continue;
        dh_clahe_axis_weight ax = dh_clahe_axis_at(a[0], a[1], dh_test_rng_below(&rng, a[0]));
        dh_clahe_axis_weight ay = dh_clahe_axis_at(b[0], b[1], dh_test_rng_below(&rng, b[0]));
        dh_clahe_axis_weight az = dh_clahe_axis_at(c[0], c[1], dh_test_rng_below(&rng, c[0]));
        uint32_t t[8];
        for (int j = 0; j < 8; j++)
            t[j] = entry(&rng);
        check_voxel(ax, ay, az, t);
        checked++;
    }
    ck_assert_int_gt(checked, 100000);
}
END_TEST

/* Exact halves: two entries p and p + 1 blended half and half along one axis give p + 1/2,
 * which rounds up; entries at the top with every weight at the bound's edge. */
START_TEST(halves_round_up_at_the_edge_of_the_bound)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 77);
    /* den_x 32766 with den_y den_z 65536: 2 den = 2^32 - 2^18, inside the bound; 65535 x 2 x
     * 16384 and 32768 x 65535 x 1: den = 2^31 - 2^15, the largest it admits (2^31 - 1 is
     * prime); 16384 x 256 x 256: den = 2^30 exactly. */
    static const uint32_t dens[][3] = {{128, 128, 128}, {32766, 256, 256}, {2, 256, 256},
                                       {32766, 2, 32768}, {65534, 2, 16384}, {2, 2, 2},
                                       {65535, 2, 16384}, {32768, 65535, 1}, {16384, 256, 256},
                                       {1, 1, 1},         {1, 65535, 1}};
    for (size_t d = 0; d < sizeof dens / sizeof *dens; d++) {
        ck_assert(dh_clahe_blend3_row_ok(dens[d][0], dens[d][1], dens[d][2]));
        for (int k = 0; k < 20000; k++) {
            dh_clahe_axis_weight ax = {0, 1, dens[d][0] / 2, dens[d][0]};
            dh_clahe_axis_weight ay = {0, 1, dh_test_rng_below(&rng, dens[d][1] + 1), dens[d][1]};
            dh_clahe_axis_weight az = {0, 1, dh_test_rng_below(&rng, dens[d][2] + 1), dens[d][2]};
            uint32_t t[8];
            const uint32_t p = k % 3 == 0 ? 65534 : dh_test_rng_below(&rng, 65535);
            for (int j = 0; j < 8; j++)
                t[j] = j % 2 ? p + 1 : p; /* x0 side p, x1 side p + 1: value p + 1/2 */
            check_voxel(ax, ay, az, t);
            for (int j = 0; j < 8; j++)
                t[j] = k % 2 ? 65535 : entry(&rng);
            ax.w1 = dh_test_rng_below(&rng, dens[d][0] + 1);
            check_voxel(ax, ay, az, t);
        }
    }
    /* The bound: 8 tiles of 512 qualify, spans whose product passes 2^31 or den_y den_z 2^16
     * do not. */
    ck_assert(dh_clahe_blend3_row_ok(128, 128, 128));
    ck_assert(dh_clahe_blend3_row_ok(65535, 2, 16384));
    ck_assert(!dh_clahe_blend3_row_ok(32768, 256, 256));
    ck_assert(!dh_clahe_blend3_row_ok(65535, 4, 8193));
    ck_assert(!dh_clahe_blend3_row_ok(2, 512, 512));
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(row_blend_equals_the_exact_rounding),
                             DH_TEST(halves_round_up_at_the_edge_of_the_bound)};
    return dh_test_run(dh_test_suite("clahe_cuda_blend", 120, DH_TESTS(tests)));
}
