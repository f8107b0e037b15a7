// SPDX-License-Identifier: MIT
/*
 * bench_mi_parzen_fixed16.cuh: `bench_mi_parzen --fixed16` (issue 22, session 20). The box
 * window's fixed rows by thresholds (pz_box_row) serve every sample type, 16-bit ones converted
 * to float32 exactly; this times the fixed pass alone on the 512^3 smooth phantom stored as
 * uint16 and as int16 (rounded, clamped to the type: values beyond the range too), in its vector
 * form by thresholds (the library's) and in the exact FP64 form it replaced, ranges given
 * (0..2200 for uint16, -200..2200 for int16), and checks the two forms' rows equal byte for byte
 * and equal to the host's dh_parzen_index(dh_parzen_position()) of every voxel. Part of
 * bench_mi_parzen.cu's translation unit (its floor_* helpers).
 */
#ifndef DH_BENCH_MI_PARZEN_FIXED16_CUH
#define DH_BENCH_MI_PARZEN_FIXED16_CUH

#include <limits>

/* The phantom as 16-bit samples: rounded to nearest, clamped to the type's range. */
template <class T>
__global__ static void fixed16_convert(const float *src, T *dst, size_t n, float lo, float hi)
{
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x)
        dst[k] = (T)fminf(fmaxf(rintf(src[k]), lo), hi);
}

template <dh_parzen_sample S, class T>
static void fixed16_run(cudaStream_t s, int sms, const float *d_phantom, const float *d_moving,
                        size_t n, double lo, double hi, const char *name)
{
    T *d16 = floor_alloc<T>(n);
    fixed16_convert<T><<<1024, 256, 0, s>>>(d_phantom, d16, n,
                                            (float)std::numeric_limits<T>::min(),
                                            (float)std::numeric_limits<T>::max());
    CK(cudaGetLastError());
    float *d_grad = floor_alloc<float>(n);
    dh_mi_values *d_out = floor_alloc<dh_mi_values>(1);
    floor_batch fb = floor_setup(sms, n, 1, nullptr, d_moving, d_grad, d_out);
    pz_args &a = fb.a;
    a.fixed = d16;
    a.fixed_sample = S;
    a.fixed_given = a.moving_given = 1;
    a.fixed_lo = a.moving_lo = lo;
    a.fixed_hi = a.moving_hi = hi;
    pz_axes_kernel<<<1, 256, 0, s>>>(a);
    int box[2], exact[2];
    CK((pz_fixed_occupancy<S, true>(box)));
    CK((pz_fixed_occupancy<S, false>(exact)));
    const unsigned box_blocks = (unsigned)pz_fixed_blocks(n, true, sms, box[1]);
    const unsigned exact_blocks = (unsigned)pz_fixed_blocks(n, true, sms, exact[1]);
    auto none = [] {};
    const double t_box = 1000.0 * floor_ms(s, none, [&] {
                             pz_fixed_vec_kernel<S, true>
                                 <<<box_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
                         });
    const std::vector<uint8_t> rows = floor_get(a.fixed_row, n);
    const double t_exact = 1000.0 * floor_ms(s, none, [&] {
                               pz_fixed_vec_kernel<S, false>
                                   <<<exact_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
                           });
    bool ok = rows == floor_get(a.fixed_row, n);
    const dh_parzen_axis fax = floor_get(a.axes + 1, 1)[0];
    const std::vector<T> v = floor_get(d16, n);
    for (size_t k = 0; k < n && ok; k++) {
        double f;
        ok = rows[k] == (uint8_t)dh_parzen_index(64, dh_parzen_position(&fax, (double)v[k]), &f);
    }
    printf("| %s (%g..%g) | %u / %u | %.1f | %.1f |\n", name, lo, hi, box_blocks, exact_blocks,
           t_box, t_exact);
    floor_check_line(name, ok,
                     "ok (the rows by thresholds equal the exact form's and the host's, every "
                     "voxel)");
    floor_free(fb);
    void *q[] = {d16, d_grad, d_out};
    for (void *x : q)
        CK(cudaFree(x));
}

static void fixed16(cudaStream_t s, const cudaDeviceProp &prop)
{
    const floor_shape &sh = FLOOR_VOLUME;
    const size_t n = sh.n;
    float *d_phantom = floor_alloc<float>(n), *d_moving = floor_alloc<float>(n);
    floor_images(sh, d_phantom, d_moving, false, s);
    printf("\n### Parzen MI 512^3 fixed pass on 16-bit samples, box window, 64 bins (--fixed16, "
           "%s)\n\n",
           prop.name);
    printf("| fixed samples (range given) | blocks: thresholds / exact | by thresholds, us | "
           "exact FP64, us |\n| --- | --- | --- | --- |\n");
    fixed16_run<DH_PARZEN_UINT16, uint16_t>(s, prop.multiProcessorCount, d_phantom, d_moving, n,
                                            0.0, 2200.0, "uint16");
    fixed16_run<DH_PARZEN_INT16, int16_t>(s, prop.multiProcessorCount, d_phantom, d_moving, n,
                                          -200.0, 2200.0, "int16");
    CK(cudaFree(d_phantom));
    CK(cudaFree(d_moving));
}

#endif /* DH_BENCH_MI_PARZEN_FIXED16_CUH */
