// SPDX-License-Identifier: MIT
/*
 * bench_mi_parzen_place3d.cuh: `bench_mi_parzen --place3d` (issue 22, session 20). Session 19
 * found the smooth 512^3 histogram pass (pz_hist_kernel) at one of two levels, about 1310 or
 * 1455 us, from one process or set of buffers to another, with the same inputs and the same bits
 * (docs/performance.md, "Session 19, parzen2" and "Session 19, the lead"). This separates the
 * buffers' placement from the rest: the same histogram pass over the same data, each variant
 * changing one thing, every histogram checked equal to the first:
 *   - the same buffers again (at the start, the middle and the end: the level within a process);
 *   - the moving volume, the fixed rows and the joint histogram each copied into fresh
 *     allocations (a 64 MiB padding allocation before each, so that each lands elsewhere), and
 *     at offsets within one allocation (256 B to 2 MiB + 256 B);
 *   - the fresh moving copies against the fresh row copies (which buffer carries the level);
 *   - the shared-memory carveout of the kernel (cudaFuncAttributePreferredSharedMemoryCarveout).
 * Ranges given and found (both levels were seen with ranges found), the smooth volume pair.
 * Part of bench_mi_parzen.cu's translation unit (its floor_* helpers).
 */
#ifndef DH_BENCH_MI_PARZEN_PLACE3D_CUH
#define DH_BENCH_MI_PARZEN_PLACE3D_CUH

constexpr int PLACE_COPIES = 4;           /* fresh allocations per buffer */
constexpr size_t PLACE_PAD = 64u << 20;   /* padding allocation before each fresh one */
constexpr size_t PLACE_SLACK = 4u << 20;  /* room for the offsets within one allocation */

/* One placement's histogram pass: its time alone (us, median of 20, the joint zeroed before
 * each) and whether its histogram and count equal the reference. */
struct place_result {
    double us;
    bool same;
};

struct place_ctx {
    cudaStream_t s;
    pz_args base; /* the floor batch's arguments, its fixed rows and axes set */
    dim3 grid;
    size_t cells;
    std::vector<unsigned long long> want_joint;
    unsigned long long want_n;
};

static place_result place_time(place_ctx &c, const float *moving, const uint8_t *rows,
                               unsigned long long *joint, unsigned long long *count)
{
    pz_args a = c.base;
    a.moving = moving;
    a.fixed_row = (uint8_t *)rows;
    a.joint = joint;
    a.n = count;
    const size_t smem = c.cells * 8;
    auto zero = [&] {
        CK(cudaMemsetAsync(a.n, 0, 8, c.s));
        CK(cudaMemsetAsync(a.joint, 0, c.cells * 8, c.s));
    };
    auto hist = [&] {
        pz_hist_kernel<DH_PARZEN_FLOAT32, false, true, false>
            <<<c.grid, PZ_HIST_THREADS, smem, c.s>>>(a);
    };
    place_result r;
    r.us = 1000.0 * floor_ms(c.s, zero, hist);
    CK(cudaStreamSynchronize(c.s));
    r.same = floor_get(joint, c.cells) == c.want_joint && floor_get(count, 1)[0] == c.want_n;
    return r;
}

/* The low 24 bits of an address in hex (its place within a 16 MiB span). */
static unsigned place_low(const void *p) { return (unsigned)((uintptr_t)p & 0xFFFFFFu); }

static void place_row(place_ctx &c, bool &ok, const char *what, const void *where,
                      const float *moving, const uint8_t *rows, unsigned long long *joint,
                      unsigned long long *count)
{
    const place_result r = place_time(c, moving, rows, joint, count);
    ok = ok && r.same;
    printf("| %s | 0x%06x | %.1f | %s |\n", what, place_low(where), r.us,
           r.same ? "same" : "DIFFERS");
}

static void place_run(cudaStream_t s, const cudaDeviceProp &prop, bool given)
{
    const floor_shape &sh = FLOOR_VOLUME;
    const size_t n = sh.n, cells = 64 * 64;
    const int sms = prop.multiProcessorCount;
    float *d_fixed = floor_alloc<float>(n), *d_moving = floor_alloc<float>(n);
    float *d_grad = floor_alloc<float>(n);
    dh_mi_values *d_out = floor_alloc<dh_mi_values>(1);
    floor_images(sh, d_fixed, d_moving, false, s);
    bool ok = true;
    {
        const dh_parzen_params p = params_of(64, DH_PARZEN_FIXED_BOX, given ? 1 : 0);
        dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
        ok = check(ws, p, sh.check_pixels, d_fixed, d_moving, 1, s);
        dh_parzen_cuda_workspace_free(ws);
    }
    floor_batch fb = floor_setup(sms, n, 1, d_fixed, d_moving, d_grad, d_out);
    pz_args &a = fb.a;
    if (given)
        floor_set_given(a);
    /* the axes and fixed rows once, then the reference histogram */
    CK(cudaMemsetAsync(a.keys, 0xFF, 16, s));
    if (!given)
        pz_range_kernel<DH_PARZEN_FLOAT32><<<fb.range_grid, PZ_PIXEL_THREADS, 0, s>>>(a);
    pz_axes_kernel<<<1, 256, 0, s>>>(a);
    pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, true>
        <<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
    CK(cudaMemsetAsync(a.n, 0, 8, s));
    CK(cudaMemsetAsync(a.joint, 0, cells * 8, s));
    pz_hist_kernel<DH_PARZEN_FLOAT32, false, true, false>
        <<<fb.hist_grid, PZ_HIST_THREADS, cells * 8, s>>>(a);
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    place_ctx c{s, a, fb.hist_grid, cells, floor_get(a.joint, cells), floor_get(a.n, 1)[0]};

    printf("\n#### smooth pair, ranges %s: the histogram pass alone (grid %u blocks, %d SMs)\n\n",
           given ? "given (-200..2200)" : "found", fb.hist_grid.y, sms);
    printf("| placement | address & 0xFFFFFF | histogram, us | histogram |\n"
           "| --- | --- | --- | --- |\n");
    place_row(c, ok, "the floor batch's buffers (start)", a.moving, d_moving, a.fixed_row, a.joint,
              a.n);

    /* fresh allocations, each after a padding allocation, kept until the end */
    std::vector<void *> held;
    float *moving[PLACE_COPIES];
    uint8_t *rows[PLACE_COPIES];
    unsigned long long *joint[PLACE_COPIES], *count[PLACE_COPIES];
    for (int i = 0; i < PLACE_COPIES; i++) {
        held.push_back(floor_alloc<char>(PLACE_PAD * (size_t)(i + 1)));
        moving[i] = floor_alloc<float>(n);
        held.push_back(floor_alloc<char>(PLACE_PAD));
        rows[i] = floor_alloc<uint8_t>(n);
        joint[i] = floor_alloc<unsigned long long>(cells);
        count[i] = floor_alloc<unsigned long long>(1);
        CK(cudaMemcpy(moving[i], d_moving, n * 4, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(rows[i], a.fixed_row, n, cudaMemcpyDeviceToDevice));
    }
    char what[160];
    for (int i = 0; i < PLACE_COPIES; i++) {
        snprintf(what, sizeof what, "moving volume: fresh allocation %d", i + 1);
        place_row(c, ok, what, moving[i], moving[i], a.fixed_row, a.joint, a.n);
    }
    for (int i = 0; i < PLACE_COPIES; i++) {
        snprintf(what, sizeof what, "fixed rows: fresh allocation %d", i + 1);
        place_row(c, ok, what, rows[i], d_moving, rows[i], a.joint, a.n);
    }
    for (int i = 0; i < PLACE_COPIES; i++) {
        snprintf(what, sizeof what, "joint histogram: fresh allocation %d", i + 1);
        place_row(c, ok, what, joint[i], d_moving, a.fixed_row, joint[i], count[i]);
    }
    place_row(c, ok, "the floor batch's buffers (middle)", a.moving, d_moving, a.fixed_row,
              a.joint, a.n);
    for (int i = 0; i < PLACE_COPIES; i++)
        for (int j = 0; j < PLACE_COPIES; j += PLACE_COPIES - 1) {
            snprintf(what, sizeof what, "fresh moving %d with fresh rows %d", i + 1, j + 1);
            place_row(c, ok, what, moving[i], moving[i], rows[j], a.joint, a.n);
        }

    /* offsets within one allocation */
    static const size_t offsets[] = {256, 4096, 65536, 1u << 20, (2u << 20) + 256};
    float *mbig = floor_alloc<float>((n * 4 + PLACE_SLACK) / 4);
    uint8_t *rbig = floor_alloc<uint8_t>(n + PLACE_SLACK);
    unsigned long long *jbig = floor_alloc<unsigned long long>((cells * 8 + PLACE_SLACK) / 8);
    for (size_t o : offsets) {
        float *m = (float *)((char *)mbig + o);
        CK(cudaMemcpy(m, d_moving, n * 4, cudaMemcpyDeviceToDevice));
        snprintf(what, sizeof what, "moving volume at +%zu B in one allocation", o);
        place_row(c, ok, what, m, m, a.fixed_row, a.joint, a.n);
    }
    for (size_t o : offsets) {
        uint8_t *r = rbig + o;
        CK(cudaMemcpy(r, a.fixed_row, n, cudaMemcpyDeviceToDevice));
        snprintf(what, sizeof what, "fixed rows at +%zu B in one allocation", o);
        place_row(c, ok, what, r, d_moving, r, a.joint, a.n);
    }
    for (size_t o : offsets) {
        unsigned long long *j = (unsigned long long *)((char *)jbig + o);
        snprintf(what, sizeof what, "joint histogram at +%zu B in one allocation", o);
        place_row(c, ok, what, j, d_moving, a.fixed_row, j, count[0]);
    }

    /* the shared-memory carveout (percent of the unified L1/shared; -1: the driver's choice) */
    auto kernel = pz_hist_kernel<DH_PARZEN_FLOAT32, false, true, false>;
    static const int carveouts[] = {100, 50, 0, -1};
    for (int co : carveouts) {
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, co));
        snprintf(what, sizeof what, "the floor batch's buffers, carveout %d%s", co,
                 co < 0 ? " (default)" : "%");
        place_row(c, ok, what, a.moving, d_moving, a.fixed_row, a.joint, a.n);
    }
    place_row(c, ok, "the floor batch's buffers (end)", a.moving, d_moving, a.fixed_row, a.joint,
              a.n);
    floor_check_line(given ? "smooth, given" : "smooth, found", ok,
                     "ok (the call equals the CPU twin on the slab; every placement's histogram "
                     "equals the first)");
    for (int i = 0; i < PLACE_COPIES; i++) {
        void *q[] = {moving[i], rows[i], joint[i], count[i]};
        for (void *x : q)
            CK(cudaFree(x));
    }
    for (void *x : held)
        CK(cudaFree(x));
    void *q[] = {mbig, rbig, jbig, d_fixed, d_moving, d_grad, d_out};
    for (void *x : q)
        CK(cudaFree(x));
    floor_free(fb);
}

static void place(cudaStream_t s, const cudaDeviceProp &prop)
{
    printf("\n### Parzen MI 512^3 pair: the histogram pass against its buffers' placement "
           "(--place3d, %s)\n",
           prop.name);
    for (int given = 1; given >= 0; given--)
        place_run(s, prop, given != 0);
}

#endif /* DH_BENCH_MI_PARZEN_PLACE3D_CUH */
