// SPDX-License-Identifier: MIT
/*
 * cmd_equalize.c: `dicomhist equalize`, histogram equalization of each volume written back as
 * a derived DICOM series (and PNG previews), and the runner it shares with `dicomhist window`
 * (cmd_window.c): options, one dh_equalize and one dh_equalized_write_dicom per volume, a
 * JSON line or a line of text per volume naming the outputs and the parameters used.
 */
#include <string.h>

#include "cli_batch.h"
#include "cli_commands.h"
#include "cmd_equalize.h"

static void equalize_help(FILE *out) {
    fprintf(out,
            "Usage: dicomhist equalize [OPTION]... -o OUTDIR PATH...\n"
            "\n"
            "Histogram equalization of each volume in the PATHs, written as a derived DICOM\n"
            "series (new series and instance UIDs, ImageType DERIVED\\SECONDARY, references to\n"
            "the sources, patient and study kept) into OUTDIR. Over one bin per stored value:\n"
            "  out(v) = floor((cdf(v) - cdf_min) * (L - 1) / (N - cdf_min))\n"
            "inside the window (cdf and N over the pixels inside it), 0 below, L - 1 above.\n"
            "A window holding one distinct value maps it to 0.\n"
            "\n"
            "Options:\n"
            "  -o, --output DIR       where the derived files go (created when missing),\n"
            "                         placed as 'cp -r PATH... DIR' places the inputs, with\n"
            "                         DIR/dicomhist-manifest.jsonl; never inside a PATH\n"
            "  --mode volume|slice    one table for the whole volume (default) or per slice\n"
            "  --window C:W           window center and width (modality units: HU for CT)\n"
            "  --window file          the file's own: the input range of its first VOI LUT,\n"
            "                         else its first WindowCenter/Width\n"
            "  --window minmax        lowest to highest value present\n"
            "  --window percentile:P  cut P%% of the pixels at each end (0 <= P < 50)\n"
            "  --window-range LO:HI   the window as a closed range of modality values\n"
            "  --clip-limit X         contrast limit: cap each bin at X times the mean count of\n"
            "                         the occupied span, spreading the excess evenly (X > 0);\n"
            "                         with CLAHE per tile\n"
            "  --method global|clahe  global (default): one table per volume or slice;\n"
            "                         clahe: contrast-limited adaptive equalization, one\n"
            "                         table per tile, each pixel blended between the tables\n"
            "                         of the nearest tile centres (2D tiles with --mode slice,\n"
            "                         3D tiles across the slices with --mode volume)\n"
            "  --tiles NxM[xK]        CLAHE: tiles along columns, rows (and slices, volume\n"
            "                         mode); default 8 along each axis (fewer pixels: fewer)\n"
            "  --tile-size N[xM[xK]]  CLAHE: instead, tiles of at most N (x M x K) pixels\n"
            "  --bins N               CLAHE: histogram bins per tile over the window,\n"
            "                         1..65536 (default: one per stored value)\n"
            "  --skimage              CLAHE computed as scikit-image's equalize_adapthist\n"
            "                         computes it, on the stored values as pydicom's\n"
            "                         pixel_array holds them: its numbers, out = round(its\n"
            "                         result x 65535) (docs/equalization.md); --tile-size N is\n"
            "                         its kernel_size (default 1/8 of each axis), --clip-limit\n"
            "                         its clip_limit fraction (default 0.01), --bins its nbins\n"
            "                         (default 256); 16-bit output; runs on the CPU\n");
    cli_derived_help_tail(out);
}

void cli_derived_help_tail(FILE *out) {
    fprintf(out,
            "  --bits 8|12|16         output bits stored (default: the input's)\n"
            "  --output-kind derived|gsps\n"
            "                         derived (default): a derived series of new pixels;\n"
            "                         gsps: one Grayscale Softcopy Presentation State per\n"
            "                         series instead (NAME.gsps.dcm beside where the derived\n"
            "                         series would go) holding the tables, the sources\n"
            "                         untouched\n"
            "  --device auto|cpu|cuda where to compute (default auto: the GPU for volumes of\n"
            "                         64M samples or more when one is usable, else the\n"
            "                         CPU, docs/batch.md); cpu: the decoders too; cuda\n"
            "                         without a usable GPU is an error\n"
            "  --png DIR              also an 8-bit PNG preview per slice, placed like the\n"
            "                         DICOM files (IM0001 -> DIR/<PATH name>/.../IM0001.png)\n"
            "  --json                 one JSON object per volume, one per line (the fields\n"
            "                         are listed in docs/command-line.md)\n"
            "  -h, --help             this text\n");
    cli_batch_help(out, 1);
    fprintf(out,
            "\n"
            "Files are written under a temporary name and renamed. Running the same command\n"
            "again skips every input the manifest says is done (same size and time, outputs\n"
            "present) and finishes the rest; an output already there is kept when it is the\n"
            "same derived instance (UIDs are named after the source and the work) and never\n"
            "replaced otherwise, unless --force. SOURCE_DATE_EPOCH, when set, is the creation\n"
            "time written, so that runs repeat byte for byte.\n"
            "Inputs that cannot be read or written are reported on stderr as\n"
            "'dicomhist: FILE: reason'; the others are still processed. A summary line ends\n"
            "the run on stderr. Exit status: 0 all inputs done, 1 some input or output\n"
            "failed, 2 usage error.\n");
}

enum { OPT_OUTPUT = 1, OPT_MODE, OPT_WINDOW, OPT_WINDOW_RANGE, OPT_CLIP, OPT_BITS, OPT_PNG, OPT_VOI,
       OPT_OUTPUT_KIND, OPT_METHOD, OPT_TILES, OPT_TILE_SIZE, OPT_BINS, OPT_SKIMAGE };

static const cli_option equalize_options[] = {
    {"output", 1, OPT_OUTPUT, 'o'},          {"mode", 1, OPT_MODE, 0},
    {"window", 1, OPT_WINDOW, 0},            {"window-range", 1, OPT_WINDOW_RANGE, 0},
    {"clip-limit", 1, OPT_CLIP, 0},          {"bits", 1, OPT_BITS, 0},
    {"png", 1, OPT_PNG, 0},                  {"output-kind", 1, OPT_OUTPUT_KIND, 0},
    {"method", 1, OPT_METHOD, 0},            {"tiles", 1, OPT_TILES, 0},
    {"tile-size", 1, OPT_TILE_SIZE, 0},      {"bins", 1, OPT_BINS, 0},
    {"skimage", 0, OPT_SKIMAGE, 0},
    CLI_OPTION_DEVICE,
    CLI_OPTION_JSON,                         CLI_OPTIONS_BATCH,
    CLI_OPTIONS_BATCH_WRITE,                 {NULL, 0, 0, 0}};

/* window's: equalize's without --clip-limit, with --function. */
static const cli_option window_options[] = {
    {"output", 1, OPT_OUTPUT, 'o'},          {"mode", 1, OPT_MODE, 0},
    {"window", 1, OPT_WINDOW, 0},            {"window-range", 1, OPT_WINDOW_RANGE, 0},
    {"function", 1, OPT_VOI, 0},             {"bits", 1, OPT_BITS, 0},
    {"png", 1, OPT_PNG, 0},                  {"output-kind", 1, OPT_OUTPUT_KIND, 0},
    CLI_OPTION_DEVICE,
    CLI_OPTION_JSON,                         CLI_OPTIONS_BATCH,
    CLI_OPTIONS_BATCH_WRITE,                 {NULL, 0, 0, 0}};

/* The options of equalize's and window's own (--device and --json are read into the
 * cli_command_line). */
typedef struct eq_options {
    dh_equalize_params params;
    const char *output, *png;
    int gsps; /* --output-kind gsps: a presentation state instead of a derived series */
    int windows; /* how many --window and --window-range were given */
    int tiling;  /* --tiles or --tile-size given (they need --method clahe) */
    uint32_t axes; /* how many sizes --tiles or --tile-size gave (1 to 3) */
    int skimage;   /* --skimage: --tile-size, --clip-limit and --bins in scikit-image's terms */
    int clip_given;
} eq_options;


static int parse_window(const char *cmd, const char *value, dh_equalize_params *p) {
    const char *why = NULL;
    if (text_parse_window(value, p, &why) != 0)
        return cli_usage_error(cmd, "--window '%s': %s", value, why);
    return -1;
}

/* One of equalize's or window's own options into the eq_options; -1 to go on, else the exit
 * status. */
static int read_eq_option(void *state, const char *cmd, int id, const char *value) {
    eq_options *o = state;
    const char *why = NULL;
    switch (id) {
    case OPT_OUTPUT:
        if (!*value)
            return cli_usage_error(cmd, "-o needs a folder");
        o->output = value;
        return -1;
    case OPT_PNG:
        if (!*value)
            return cli_usage_error(cmd, "--png needs a folder");
        o->png = value;
        return -1;
    case OPT_OUTPUT_KIND:
        if (strcmp(value, "derived") == 0)
            o->gsps = 0;
        else if (strcmp(value, "gsps") == 0)
            o->gsps = 1;
        else
            return cli_usage_error(cmd, "--output-kind '%s': expected derived or gsps", value);
        return -1;
    case OPT_MODE:
        if (strcmp(value, "volume") == 0)
            o->params.per_slice = 0;
        else if (strcmp(value, "slice") == 0)
            o->params.per_slice = 1;
        else
            return cli_usage_error(cmd, "--mode '%s': expected volume or slice", value);
        return -1;
    case OPT_WINDOW:
        o->windows++;
        return parse_window(cmd, value, &o->params);
    case OPT_WINDOW_RANGE:
        o->windows++;
        if (text_parse_range(value, &o->params.lo, &o->params.hi, &why) != 0)
            return cli_usage_error(cmd, "--window-range '%s': %s", value, why);
        o->params.window = DH_WINDOW_RANGE;
        return -1;
    case OPT_CLIP:
        if (text_parse_double(value, &o->params.clip_limit) != 0 || !(o->params.clip_limit > 0))
            return cli_usage_error(cmd, "--clip-limit '%s': expected a number > 0", value);
        o->clip_given = 1;
        return -1;
    case OPT_BITS:
        if (text_parse_u32(value, 8, 16, &o->params.output_bits) != 0 ||
            (o->params.output_bits != 8 && o->params.output_bits != 12 &&
             o->params.output_bits != 16))
            return cli_usage_error(cmd, "--bits '%s': expected 8, 12 or 16", value);
        return -1;
    case OPT_METHOD:
        if (strcmp(value, "global") == 0)
            o->params.method = DH_EQ_METHOD_GLOBAL;
        else if (strcmp(value, "clahe") == 0)
            o->params.method = DH_EQ_METHOD_CLAHE;
        else
            return cli_usage_error(cmd, "--method '%s': expected global or clahe", value);
        return -1;
    case OPT_TILES:
    case OPT_TILE_SIZE: {
        uint32_t axes[3] = {0, 0, 0}, n = 0;
        if (o->tiling)
            return cli_usage_error(cmd, "give one --tiles or --tile-size");
        if (text_parse_axes(value, id == OPT_TILES ? 2 : 1, axes, &n) != 0)
            return cli_usage_error(cmd, "--%s '%s': expected %s (each 1..65535)",
                                   id == OPT_TILES ? "tiles" : "tile-size", value,
                                   id == OPT_TILES ? "NxM or NxMxK" : "N, NxM or NxMxK");
        if (n == 1) /* one size for the columns and rows, and the slices in volume mode */
            axes[1] = axes[0];
        memcpy(id == OPT_TILES ? o->params.tiles : o->params.tile_size, axes, sizeof axes);
        o->tiling = 1;
        o->axes = n;
        return -1;
    }
    case OPT_SKIMAGE:
        o->skimage = 1;
        return -1;
    case OPT_BINS:
        if (text_parse_u32(value, 1, 65536, &o->params.bins) != 0)
            return cli_usage_error(cmd, "--bins '%s': expected 1..65536", value);
        return -1;
    case OPT_VOI:
        if (strcmp(value, "linear") == 0 || strcmp(value, "LINEAR") == 0)
            o->params.voi = DH_VOI_LINEAR;
        else if (strcmp(value, "linear-exact") == 0 || strcmp(value, "LINEAR_EXACT") == 0)
            o->params.voi = DH_VOI_LINEAR_EXACT;
        else if (strcmp(value, "sigmoid") == 0 || strcmp(value, "SIGMOID") == 0)
            o->params.voi = DH_VOI_SIGMOID;
        else
            return cli_usage_error(cmd, "--function '%s': expected linear, linear-exact or "
                                        "sigmoid", value);
        return -1;
    default:
        return cli_usage_error(cmd, "internal: unhandled option");
    }
}

/* What must hold once the whole command line is read; -1 when it does, else 2 (reported). */
static int check_eq_command_line(const char *cmd, const cli_command_line *cl, const eq_options *o) {
    if (!o->output)
        return cli_usage_error(cmd, "-o OUTDIR is required");
    if (cl->path_count == 0)
        return cli_usage_error(cmd, "no PATH given");
    if (o->windows > 1)
        return cli_usage_error(cmd, "give one --window or --window-range");
    if (o->params.operation == DH_EQ_WINDOW_LEVEL && o->windows == 0)
        return cli_usage_error(cmd, "a window is required (--window or --window-range)");
    const int clahe = o->params.method == DH_EQ_METHOD_CLAHE || o->skimage;
    if (o->skimage && (o->windows || o->params.tiles[0] || o->axes > 1 || o->params.output_bits))
        return cli_usage_error(cmd, "--skimage sets the window, the bits and the tiles (give "
                                    "its kernel size as one --tile-size N)");
    if (!clahe && (o->tiling || o->params.bins))
        return cli_usage_error(cmd, "--tiles, --tile-size and --bins need --method clahe");
    if (clahe && o->params.per_slice && o->axes == 3)
        return cli_usage_error(cmd, "tiles across slices (NxMxK) need --mode volume");
    if (clahe && o->gsps)
        return cli_usage_error(cmd, "--method clahe has no table per image for a presentation "
                                    "state: use --output-kind derived");
    return -1;
}

static const char *window_source_name(dh_window_source w) {
    switch (w) {
    case DH_WINDOW_NONE: return "none";
    case DH_WINDOW_CENTER_WIDTH: return "center-width";
    case DH_WINDOW_RANGE: return "range";
    case DH_WINDOW_FILE: return "file";
    case DH_WINDOW_MINMAX: return "minmax";
    default: return "percentile";
    }
}

static void eq_record_json(report_json *j, const dh_volume *v, const eq_options *o,
                        const dh_equalized *r, const dh_derived_series *s) {
    const dh_equalize_params *p = &o->params;
    report_json_begin_object(j);
    report_json_key(j, "path");
    report_json_string(j, dh_volume_path(v));
    report_json_key(j, "operation");
    report_json_string(j, p->operation == DH_EQ_EQUALIZE ? "equalize" : "window");
    report_json_key(j, "mode");
    report_json_string(j, p->per_slice ? "slice" : "volume");
    report_json_key(j, "window");
    report_json_string(j, window_source_name(p->window));
    if (p->window == DH_WINDOW_PERCENTILE) {
        report_json_key(j, "percentile");
        report_json_double(j, p->percentile);
    }
    if (p->operation == DH_EQ_WINDOW_LEVEL) {
        report_json_key(j, "function");
        const int voi_lut = p->window == DH_WINDOW_FILE &&
                            dh_volume_voi_lut(v, NULL, NULL, NULL, NULL, NULL);
        report_json_string(j, voi_lut                          ? "VOI_LUT"
                           : p->voi == DH_VOI_LINEAR         ? "LINEAR"
                           : p->voi == DH_VOI_LINEAR_EXACT ? "LINEAR_EXACT"
                                                           : "SIGMOID");
    } else {
        report_json_key(j, "clip_limit");
        report_json_double(j, p->clip_limit);
    }
    if (p->method == DH_EQ_METHOD_CLAHE) { /* global records keep their fields as they were */
        report_json_key(j, "method");
        report_json_string(j, "clahe");
        report_json_key(j, "bins");
        report_json_u64(j, p->bins);
    } else if (p->method == DH_EQ_METHOD_CLAHE_SKIMAGE) {
        report_json_key(j, "method");
        report_json_string(j, "clahe-skimage");
        report_json_key(j, "bins");
        report_json_u64(j, p->bins);
    }
    /* The window actually used, per table (one in volume mode). */
    report_json_key(j, "windows");
    report_json_begin_array(j);
    for (uint32_t t = 0; t < r->table_count; t++) {
        report_json_begin_object(j);
        report_json_key(j, "lo");
        report_json_double(j, r->window_lo[t]);
        report_json_key(j, "hi");
        report_json_double(j, r->window_hi[t]);
        if (p->operation == DH_EQ_WINDOW_LEVEL) {
            report_json_key(j, "center");
            report_json_double(j, r->center[t]);
            report_json_key(j, "width");
            report_json_double(j, r->width[t]);
        }
        report_json_end_object(j);
    }
    report_json_end_array(j);
    report_json_key(j, "bits");
    report_json_u64(j, r->output_bits);
    report_json_key(j, "device");
    report_json_string(j, r->device_used == DH_DEVICE_CUDA ? "cuda" : "cpu");
    report_json_key(j, "derivation");
    report_json_string(j, r->description);
    if (o->gsps) { /* the default's records keep their fields as they were */
        report_json_key(j, "output_kind");
        report_json_string(j, "gsps");
    }
    report_json_key(j, "series_uid");
    report_json_string(j, s->series_uid);
    report_json_key(j, "outputs");
    report_json_begin_array(j);
    for (size_t i = 0; i < s->file_count; i++)
        report_json_string(j, s->files[i]);
    report_json_end_array(j);
    if (o->png) {
        report_json_key(j, "png");
        report_json_string(j, o->png);
    }
    report_json_end_object(j);
    report_json_end_line(j);
}

/* The second half of a series: its outputs written, then its record (cli_series_defer: on the
 * worker's writer thread while the worker reads the next series). */
static int eq_write(void *state, const cli_command_line *cl, cli_series *s, const dh_volume *v,
                    void *pending) {
    const eq_options *o = state;
    dh_equalized *r = pending;
    dh_derived_series *d = NULL;
    dh_derive_params wp;
    dh_derive_params_init(&wp);
    wp.existing = s->existing;
    wp.uids = DH_UIDS_DERIVED; /* the same work gives the same UIDs: resumable, repeatable */
    wp.created = s->created;
    wp.output_name = cli_series_output_name;
    wp.written = cli_series_written;
    wp.user = s;
    cli_stage_clock t = cli_stage_start();
    dh_status st = o->gsps ? dh_equalized_write_gsps(s->ctx, v, r, o->output, &wp, &d)
                           : dh_equalized_write_dicom_with(s->ctx, v, r, o->output, &wp, &d);
    if (st == DH_OK && o->png)
        st = dh_equalized_write_png_with(s->ctx, v, r, o->png, &wp);
    cli_series_stage(s, CLI_STAGE_WRITE, t);
    if (st != DH_OK) {
        cli_series_fail(s, dh_volume_path(v), dh_ctx_error(s->ctx));
        dh_equalized_free(r);
        dh_derived_series_free(d);
        return 1;
    }
    if (cl->json) {
        eq_record_json(s->json, v, o, r, d);
    } else {
        report_sink_printf(s->out, "%s: %zu %s%s in series %s (%s)\n", dh_volume_path(v),
                        d->file_count, o->gsps ? "presentation state" : "file",
                        d->file_count == 1 ? "" : "s", d->series_uid, r->description);
        for (size_t k = 0; k < d->file_count; k++)
            report_sink_printf(s->out, "  %s\n", d->files[k]);
    }
    dh_equalized_free(r);
    dh_derived_series_free(d);
    return 0;
}

static int eq_series(void *state, const cli_command_line *cl, cli_series *s,
                     const dh_volume *v) {
    (void)cl;
    const eq_options *o = state;
    dh_equalized *r = NULL;
    dh_equalize_params params = o->params; /* shared by the workers: the device is the series' */
    params.device = cli_series_device(s, v);
    cli_stage_clock t = cli_stage_start();
    dh_status st = dh_equalize(s->ctx, v, &params, &r);
    cli_series_stage(s, CLI_STAGE_COMPUTE, t);
    if (st != DH_OK) {
        cli_series_fail(s, dh_volume_path(v), dh_ctx_error(s->ctx));
        return 1;
    }
    cli_series_defer(s, eq_write, r);
    return 0;
}

int cli_equalize_main(int argc, char **argv, dh_eq_operation op, void (*help)(FILE *out)) {
    const char *cmd = op == DH_EQ_EQUALIZE ? "equalize" : "window";
    eq_options o;
    memset(&o, 0, sizeof o);
    dh_equalize_params_init(&o.params);
    o.params.operation = op;
    cli_command_line cl;
    int status = cli_read_command_line(&cl, cmd, argc, argv,
                                       op == DH_EQ_EQUALIZE ? equalize_options : window_options,
                                       help,
                                       read_eq_option, &o);
    if (status < 0)
        status = check_eq_command_line(cmd, &cl, &o);
    if (status < 0) {
        o.params.device = cl.device;
        if (o.axes == 1 && !o.params.per_slice) /* --tile-size N: N along the slices too */
            o.params.tile_size[2] = o.params.tile_size[0];
        if (o.skimage)
            dh_equalize_params_skimage(&o.params, o.params.tile_size[0],
                                       o.clip_given ? o.params.clip_limit : 0.01,
                                       o.params.bins);
        /* Everything that changes the outputs; a manifest line is "done" for this work only. */
        const dh_equalize_params *p = &o.params;
        char work[640], clahe[128] = "";
        if (p->method == DH_EQ_METHOD_CLAHE) /* global work keeps its manifest lines as they were */
            snprintf(clahe, sizeof clahe, " method=clahe tiles=%ux%ux%u size=%ux%ux%u bins=%u",
                     p->tiles[0], p->tiles[1], p->tiles[2], p->tile_size[0], p->tile_size[1],
                     p->tile_size[2], p->bins);
        else if (p->method == DH_EQ_METHOD_CLAHE_SKIMAGE)
            snprintf(clahe, sizeof clahe, " method=clahe-skimage size=%ux%ux%u bins=%u",
                     p->tile_size[0], p->tile_size[1], p->tile_size[2], p->bins);
        snprintf(work, sizeof work,
                 "%s mode=%s window=%s center=%.17g width=%.17g range=%.17g:%.17g "
                 "percentile=%.17g function=%d clip=%.17g bits=%u png=%s%s%s",
                 cmd, p->per_slice ? "slice" : "volume", window_source_name(p->window), p->center,
                 p->width, p->lo, p->hi, p->percentile, (int)p->voi, p->clip_limit,
                 (unsigned)p->output_bits, o.png ? o.png : "-", o.gsps ? " kind=gsps" : "", clahe);
        cli_batch_config config = {.outdir = o.output, .png_dir = o.png, .work = work,
                                   .device_samples = o.params.method == DH_EQ_METHOD_GLOBAL};
        status = cli_run_batch(&cl, &config, eq_series, &o);
    }
    cli_command_line_free(&cl);
    return status;
}

static int equalize_run(int argc, char **argv) {
    return cli_equalize_main(argc, argv, DH_EQ_EQUALIZE, equalize_help);
}

const cli_command cli_command_equalize = {
    "equalize",
    "histogram equalization written as derived DICOM: windowed, contrast-limited, per slice",
    equalize_run,
    equalize_help,
};
