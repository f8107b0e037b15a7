// SPDX-License-Identifier: MIT
/*
 * consumer.c: a C host built against an installed dicomhist (tests/package/test_package.sh),
 * through find_package(dicomhist) or pkg-config. Reads one DICOM file through the public API and
 * prints its histogram summary; consumer.cpp prints the same lines from C++.
 *   consumer FILE.dcm
 */
#include <dicomhist.h>

#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.dcm\n", argv[0]);
        return 2;
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *volume = NULL;
    dh_histogram *hist = NULL;
    dh_hist_params params;
    dh_hist_params_init(&params);
    params.bins = 16;
    params.device = DH_DEVICE_CPU;
    if (!ctx || dh_volume_read_file(ctx, argv[1], &volume) != DH_OK ||
        dh_hist_compute(ctx, volume, &params, &hist) != DH_OK) {
        fprintf(stderr, "consumer: %s\n", ctx ? dh_ctx_error(ctx) : "no context");
        dh_volume_free(volume);
        dh_ctx_free(ctx);
        return 1;
    }
    int32_t min = 0, max = 0;
    dh_volume_stored_range(volume, &min, &max);
    printf("dicomhist %s (header %s)\n", dh_version_string(), DH_VERSION_STRING);
    printf("%" PRIu32 " x %" PRIu32 " x %" PRIu32 ", %" PRIu32 " of %" PRIu32
           " bits, stored %" PRId32 " .. %" PRId32 "\n",
           dh_volume_columns(volume), dh_volume_rows(volume), dh_volume_slices(volume),
           dh_volume_bits_stored(volume), dh_volume_bits_allocated(volume), min, max);
    printf("%" PRIu32 " bins over [%g, %g): total %" PRIu64 ", underflow %" PRIu64
           ", overflow %" PRIu64 "\n",
           hist->bins, hist->lo, hist->hi, hist->total, hist->underflow, hist->overflow);
    printf("counts ");
    for (uint32_t i = 0; i < hist->bins; i++)
        printf("%s%" PRIu64, i ? "," : "", hist->counts[i]);
    printf("\n");
    dh_histogram_free(hist);
    dh_volume_free(volume);
    dh_ctx_free(ctx);
    return 0;
}
