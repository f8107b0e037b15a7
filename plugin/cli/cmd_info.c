// SPDX-License-Identifier: MIT
/*
 * cmd_info.c: `dicomhist info`, what each volume is: geometry, pixel format, rescale, transfer
 * syntax, value range, spacing and the warnings found while assembling it. One JSON object per
 * volume with --json, else an aligned block per volume for people.
 */
#include <string.h>

#include "cli_batch.h"
#include "cli_commands.h"

static void info_help(FILE *out) {
    fprintf(out,
            "Usage: dicomhist info [--json] [OPTION]... PATH...\n"
            "\n"
            "Describes each volume found in the PATHs (a file, a directory holding a series,\n"
            "or several files): geometry, bits, signedness, photometric interpretation,\n"
            "rescale or Modality LUT, transfer syntax, whether the pixels were lossy\n"
            "compressed, smallest and largest stored and modality value (through the\n"
            "Modality LUT when the file has one), slice spacing and warnings (such as\n"
            "uneven spacing).\n"
            "\n"
            "Options:\n"
            "  --json      one JSON object per volume, one per line, with the fields path,\n"
            "              series_uid, modality, rows, columns, slices, bits_allocated,\n"
            "              bits_stored, signed, photometric, rescale_slope,\n"
            "              rescale_intercept, modality_lut (entries, first_mapped and\n"
            "              bits, or null), transfer_syntax, lossy, lossy_method,\n"
            "              decoder (which decoders read the pixels: native, dcmtk,\n"
            "              charls, openjpeg, nvjpeg2k, nvjpeg), decoder_note (why the GPU\n"
            "              did not decode what it could have, else \"\"),\n"
            "              stored_min, stored_max, modality_min, modality_max, spacing,\n"
            "              warnings\n"
            "  -h, --help  this text\n");
    cli_batch_help(out, 0);
    fprintf(out,
            "\n"
            "Only headers are read to plan the work; then each series is read, described and\n"
            "freed, so memory follows the largest series, not the inputs.\n"
            "Inputs that cannot be read are reported on stderr as 'dicomhist: FILE: reason';\n"
            "the others are still described. Exit status: 0 all inputs read, 1 some failed,\n"
            "2 usage error.\n");
}

/* Names of the transfer syntaxes one meets in X-ray and CT, for people only (JSON keeps the UID). */
static const char *transfer_syntax_name(const char *uid) {
    static const struct {
        const char *uid, *name;
    } known[] = {
        {"1.2.840.10008.1.2", "Implicit VR Little Endian"},
        {"1.2.840.10008.1.2.1", "Explicit VR Little Endian"},
        {"1.2.840.10008.1.2.1.99", "Deflated Explicit VR Little Endian"},
        {"1.2.840.10008.1.2.2", "Explicit VR Big Endian"},
        {"1.2.840.10008.1.2.4.50", "JPEG Baseline"},
        {"1.2.840.10008.1.2.4.51", "JPEG Extended (12-bit)"},
        {"1.2.840.10008.1.2.4.57", "JPEG Lossless"},
        {"1.2.840.10008.1.2.4.70", "JPEG Lossless SV1"},
        {"1.2.840.10008.1.2.4.80", "JPEG-LS Lossless"},
        {"1.2.840.10008.1.2.4.81", "JPEG-LS Near-Lossless"},
        {"1.2.840.10008.1.2.4.90", "JPEG 2000 Lossless"},
        {"1.2.840.10008.1.2.4.91", "JPEG 2000"},
        {"1.2.840.10008.1.2.4.201", "HTJ2K Lossless"},
        {"1.2.840.10008.1.2.4.202", "HTJ2K Lossless RPCL"},
        {"1.2.840.10008.1.2.4.203", "HTJ2K"},
        {"1.2.840.10008.1.2.5", "RLE Lossless"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(known[i].uid, uid) == 0)
            return known[i].name;
    }
    return NULL;
}

static void info_text(report_sink *s, const dh_volume *v, int first) {
    int32_t smin = 0, smax = 0;
    double mmin, mmax;
    dh_volume_stored_range(v, &smin, &smax);
    report_modality_range(v, &mmin, &mmax);
    const char *syntax = dh_volume_transfer_syntax(v);
    const char *syntax_name = transfer_syntax_name(syntax);
    const char *modality = dh_volume_modality(v);

    if (!first)
        report_sink_char(s, '\n');
    report_sink_printf(s, "%s\n", dh_volume_path(v));
    report_sink_printf(s, "  %-16s %s\n", "modality", *modality ? modality : "-");
    report_sink_printf(s, "  %-16s %s\n", "series", *dh_volume_series_uid(v) ? dh_volume_series_uid(v) : "-");
    report_sink_printf(s, "  %-16s %u x %u x %u (columns x rows x slices)\n", "size",
                    (unsigned)dh_volume_columns(v), (unsigned)dh_volume_rows(v),
                    (unsigned)dh_volume_slices(v));
    report_sink_printf(s, "  %-16s %u of %u bits, %s, %s\n", "pixels",
                    (unsigned)dh_volume_bits_stored(v), (unsigned)dh_volume_bits_allocated(v),
                    dh_volume_is_signed(v) ? "signed" : "unsigned",
                    report_photometric_name(dh_volume_photometric(v)));
    int32_t lut_first = 0;
    uint32_t lut_entries = 0, lut_bits = 0;
    if (dh_volume_modality_lut(v, &lut_first, &lut_entries, &lut_bits, NULL))
        report_sink_printf(s, "  %-16s %u entries of %u bits from stored %ld (replaces the "
                              "rescale)\n",
                           "modality LUT", (unsigned)lut_entries, (unsigned)lut_bits,
                           (long)lut_first);
    else
        report_sink_printf(s, "  %-16s %.10g x stored %c %.10g\n", "rescale",
                           dh_volume_rescale_slope(v), dh_volume_rescale_intercept(v) < 0 ? '-' : '+',
                           dh_volume_rescale_intercept(v) < 0 ? -dh_volume_rescale_intercept(v)
                                                              : dh_volume_rescale_intercept(v));
    if (syntax_name)
        report_sink_printf(s, "  %-16s %s (%s)\n", "transfer syntax", syntax_name, syntax);
    else
        report_sink_printf(s, "  %-16s %s\n", "transfer syntax", *syntax ? syntax : "-");
    const char *lossy_method = "";
    if (dh_volume_lossy(v, &lossy_method))
        report_sink_printf(s, "  %-16s yes%s%s (the values may differ from those acquired)\n", "lossy",
                           *lossy_method ? ", " : "", lossy_method);
    report_sink_printf(s, "  %-16s %ld .. %ld\n", "stored values", (long)smin, (long)smax);
    report_sink_printf(s, "  %-16s %.10g .. %.10g\n", "modality values", mmin, mmax);
    if (dh_volume_slices(v) > 1)
        report_sink_printf(s, "  %-16s %.6g mm\n", "spacing", dh_volume_spacing(v));
    for (size_t i = 0; i < dh_volume_warning_count(v); i++)
        report_sink_printf(s, "  %-16s %s\n", "warning", dh_volume_warning(v, i));
}

static int info_series(void *state, const cli_command_line *cl, cli_series *s,
                       const dh_volume *v) {
    (void)state;
    report_names names = {.decoder_note = cli_series_decoder_note(s)};
    if (cl->json)
        report_info_record(s->json, v, &names), report_json_end_line(s->json);
    else
        info_text(s->out, v, 1);
    return 0;
}

static int info_run(int argc, char **argv) {
    static const cli_option options[] = {CLI_OPTION_JSON, CLI_OPTIONS_BATCH, {NULL, 0, 0, 0}};
    cli_command_line cl;
    int status = cli_read_command_line(&cl, "info", argc, argv, options, info_help, NULL, NULL);
    if (status < 0 && cl.path_count == 0)
        status = cli_usage_error("info", "no PATH given");
    if (status < 0)
    {
        cli_batch_config config = {.blank_between = 1};
        status = cli_run_batch(&cl, &config, info_series, NULL);
    }
    cli_command_line_free(&cl);
    return status;
}

const cli_command cli_command_info = {
    "info",
    "describe each volume: geometry, bits, rescale, value range, spacing",
    info_run,
    info_help,
};
