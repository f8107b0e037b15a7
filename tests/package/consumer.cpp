// SPDX-License-Identifier: MIT
/*
 * consumer.cpp: the C++ twin of consumer.c (the same lines out), holding the API's objects in
 * std::unique_ptr: the header is usable from C++ as it is (extern "C", no C-only constructs).
 *   consumer_cxx FILE.dcm
 */
#include <dicomhist.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>

namespace {
struct CtxFree {
    void operator()(dh_ctx *ctx) const { dh_ctx_free(ctx); }
};
struct VolumeFree {
    void operator()(dh_volume *volume) const { dh_volume_free(volume); }
};
struct HistogramFree {
    void operator()(dh_histogram *hist) const { dh_histogram_free(hist); }
};
} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::cerr << "usage: " << argv[0] << " FILE.dcm\n";
        return 2;
    }
    std::unique_ptr<dh_ctx, CtxFree> ctx(dh_ctx_create());
    if (!ctx) {
        std::cerr << "consumer_cxx: no context\n";
        return 1;
    }
    dh_volume *raw_volume = nullptr;
    if (dh_volume_read_file(ctx.get(), argv[1], &raw_volume) != DH_OK) {
        std::cerr << "consumer_cxx: " << dh_ctx_error(ctx.get()) << "\n";
        return 1;
    }
    std::unique_ptr<dh_volume, VolumeFree> volume(raw_volume);
    dh_hist_params params;
    dh_hist_params_init(&params);
    params.bins = 16;
    params.device = DH_DEVICE_CPU;
    dh_histogram *raw_hist = nullptr;
    if (dh_hist_compute(ctx.get(), volume.get(), &params, &raw_hist) != DH_OK) {
        std::cerr << "consumer_cxx: " << dh_ctx_error(ctx.get()) << "\n";
        return 1;
    }
    std::unique_ptr<dh_histogram, HistogramFree> hist(raw_hist);
    std::int32_t min = 0, max = 0;
    dh_volume_stored_range(volume.get(), &min, &max);
    std::ostringstream out;
    out << "dicomhist " << dh_version_string() << " (header " << DH_VERSION_STRING << ")\n"
        << dh_volume_columns(volume.get()) << " x " << dh_volume_rows(volume.get()) << " x "
        << dh_volume_slices(volume.get()) << ", " << dh_volume_bits_stored(volume.get()) << " of "
        << dh_volume_bits_allocated(volume.get()) << " bits, stored " << min << " .. " << max
        << "\n"
        << hist->bins << " bins over [" << hist->lo << ", " << hist->hi << "): total "
        << hist->total << ", underflow " << hist->underflow << ", overflow " << hist->overflow
        << "\ncounts ";
    for (std::uint32_t i = 0; i < hist->bins; i++)
        out << (i ? "," : "") << hist->counts[i];
    std::cout << out.str() << "\n";
    return 0;
}
