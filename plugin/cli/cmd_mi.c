/*
 * cmd_mi.c: `dicomhist mi`, mutual information between a fixed image or volume and each moving
 * one of the same shape: MI, NMI, ECC and the three entropies over a joint histogram (dicomhist.h
 * section 5). One JSON line per moving input with --json, one line for people otherwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_commands.h"
#include "cli_output.h"

static void mi_help(FILE *out) {
    fprintf(out,
            "Usage: dicomhist mi [OPTION]... FIXED MOVING...\n"
            "\n"
            "Mutual information between FIXED and each MOVING image or volume (a DICOM file,\n"
            "or a directory holding one series), all of the same shape. Stored values are\n"
            "binned over an inclusive range [LO, HI] per image:\n"
            "  bin = floor((value - LO) * BINS / (HI - LO + 1))\n"
            "and only pixels inside both ranges (and the mask) are counted.\n"
            "\n"
            "Options:\n"
            "  --bins B | BF:BM      bins per image, 2..256, or fixed:moving (default 64)\n"
            "  --range-fixed LO:HI   fixed range in stored values (default: its min..max over\n"
            "                        the mask)\n"
            "  --range-moving LO:HI  moving range in stored values (default: each moving\n"
            "                        image's own min..max)\n"
            "  --mask FILE           a DICOM image of FIXED's shape; pixels whose stored value\n"
            "                        is 0 are left out\n"
            "  --log2                entropies and MI in bits (default: nats)\n"
            "  --device auto|cpu|cuda\n"
            "                        where to compute (default auto); both give the same bits\n"
            "  --json                one JSON object per moving input, one per line, with\n"
            "                        fixed, moving, bins [BF, BM], unit, mi, nmi, ecc,\n"
            "                        h_fixed, h_moving, h_joint, n, range_fixed,\n"
            "                        range_moving, device and status (\"ok\", \"empty\": no\n"
            "                        pixel counted, \"zero_joint_entropy\": one joint bin\n"
            "                        holds everything); undefined values are null\n"
            "  -h, --help            this text\n"
            "\n"
            "MI = H(F) + H(M) - H(F,M); NMI = (H(F) + H(M)) / H(F,M) (Studholme, 1..2);\n"
            "ECC = 2 MI / (H(F) + H(M)). Exit status: 0 all inputs done, 1 some failed\n"
            "(shapes that differ included), 2 usage error.\n");
}

typedef struct mi_options {
    dh_mi_params params;
    const char *mask;
    int json;
} mi_options;

enum { OPT_BINS = 1, OPT_RANGE_FIXED, OPT_RANGE_MOVING, OPT_MASK, OPT_LOG2, OPT_DEVICE, OPT_JSON };

static const cli_option mi_options_table[] = {
    {"bins", 1, OPT_BINS},     {"range-fixed", 1, OPT_RANGE_FIXED},
    {"range-moving", 1, OPT_RANGE_MOVING}, {"mask", 1, OPT_MASK},
    {"log2", 0, OPT_LOG2},     {"device", 1, OPT_DEVICE},
    {"json", 0, OPT_JSON},     {NULL, 0, 0},
};

/* "B" or "BF:BM". */
static int parse_bins(const char *text, uint32_t *bf, uint32_t *bm) {
    const char *colon = strchr(text, ':');
    if (!colon)
        return cli_parse_u32(text, DH_MI_MIN_BINS, DH_MI_MAX_BINS, bf) == 0 ? (*bm = *bf, 0) : -1;
    char first[32];
    size_t len = (size_t)(colon - text);
    if (len == 0 || len >= sizeof first)
        return -1;
    memcpy(first, text, len);
    first[len] = '\0';
    if (cli_parse_u32(first, DH_MI_MIN_BINS, DH_MI_MAX_BINS, bf) != 0 ||
        cli_parse_u32(colon + 1, DH_MI_MIN_BINS, DH_MI_MAX_BINS, bm) != 0)
        return -1;
    return 0;
}

/* "LO:HI" in whole stored values. */
static int parse_int_range(const char *option, const char *text, int32_t *lo, int32_t *hi) {
    double a, b;
    const char *why = NULL;
    if (cli_parse_range(text, &a, &b, &why) != 0)
        return cli_usage_error("mi", "--%s '%s': %s", option, text, why);
    if (a != floor(a) || b != floor(b) || a < -32768 || b > 65535 || b - a + 1 > 65536)
        return cli_usage_error("mi", "--%s '%s': expected whole stored values within "
                                     "-32768..65535, at most 65536 apart", option, text);
    *lo = (int32_t)a;
    *hi = (int32_t)b;
    return 0;
}

/* Reads options into o and operands into paths; returns -1 to go on, else an exit status. */
static int parse_mi_args(int argc, char **argv, mi_options *o, const char **paths, size_t *count) {
    cli_parser p;
    cli_parser_init(&p, "mi", argc, argv);
    for (;;) {
        const char *value;
        int id = cli_next(&p, mi_options_table, &value);
        switch (id) {
        case CLI_END:
            if (*count < 2)
                return cli_usage_error("mi", "expected FIXED and at least one MOVING");
            return -1;
        case CLI_ERROR:
            return CLI_EXIT_USAGE;
        case CLI_HELP:
            mi_help(stdout);
            return CLI_EXIT_OK;
        case CLI_OPERAND:
            paths[(*count)++] = value;
            break;
        case OPT_BINS:
            if (parse_bins(value, &o->params.bins_fixed, &o->params.bins_moving) != 0)
                return cli_usage_error("mi", "--bins '%s': expected B or BF:BM, each 2..256", value);
            break;
        case OPT_RANGE_FIXED:
            if (parse_int_range("range-fixed", value, &o->params.fixed_lo, &o->params.fixed_hi))
                return CLI_EXIT_USAGE;
            o->params.has_range_fixed = 1;
            break;
        case OPT_RANGE_MOVING:
            if (parse_int_range("range-moving", value, &o->params.moving_lo, &o->params.moving_hi))
                return CLI_EXIT_USAGE;
            o->params.has_range_moving = 1;
            break;
        case OPT_MASK:
            if (!*value)
                return cli_usage_error("mi", "--mask needs a file name");
            o->mask = value;
            break;
        case OPT_LOG2:
            o->params.log2 = 1;
            break;
        case OPT_DEVICE:
            if (strcmp(value, "auto") == 0)
                o->params.device = DH_DEVICE_AUTO;
            else if (strcmp(value, "cpu") == 0)
                o->params.device = DH_DEVICE_CPU;
            else if (strcmp(value, "cuda") == 0)
                o->params.device = DH_DEVICE_CUDA;
            else
                return cli_usage_error("mi", "--device '%s': expected auto, cpu or cuda", value);
            break;
        case OPT_JSON:
            o->json = 1;
            break;
        default:
            return cli_usage_error("mi", "internal: unhandled option");
        }
    }
}

/* Loads one operand that must hold exactly one volume; reports and returns NULL otherwise. */
static dh_volume_set *load_one(dh_ctx *ctx, const char *path) {
    int failed = 0;
    dh_volume_set *set = cli_load_inputs(ctx, &path, 1, &failed);
    if (!set)
        return NULL;
    size_t n = dh_volume_set_count(set);
    if (n != 1 || failed) {
        if (n != 1) {
            char why[96];
            snprintf(why, sizeof why, "holds %zu volumes; mi needs exactly one per operand", n);
            cli_report_failure(path, why);
        }
        dh_volume_set_free(set);
        return NULL;
    }
    return set;
}

static int same_shape(const dh_volume *a, const dh_volume *b) {
    return dh_volume_rows(a) == dh_volume_rows(b) && dh_volume_columns(a) == dh_volume_columns(b) &&
           dh_volume_slices(a) == dh_volume_slices(b);
}

static void shape_text(const dh_volume *v, char *out, size_t size) {
    snprintf(out, size, "%ux%ux%u", (unsigned)dh_volume_columns(v), (unsigned)dh_volume_rows(v),
             (unsigned)dh_volume_slices(v));
}

static const char *status_name(uint32_t status) {
    if (status & DH_MI_EMPTY)
        return "empty";
    if (status & DH_MI_ZERO_JOINT_ENTROPY)
        return "zero_joint_entropy";
    return "ok";
}

static void record_json(cli_json *j, const char *fixed, const char *moving,
                        const dh_mi_fixed_info *info, int log2, const dh_mi_scores *s) {
    cli_json_begin_object(j);
    cli_json_key(j, "fixed"), cli_json_string(j, fixed);
    cli_json_key(j, "moving"), cli_json_string(j, moving);
    cli_json_key(j, "bins");
    cli_json_begin_array(j);
    cli_json_u64(j, info->bins_fixed);
    cli_json_u64(j, info->bins_moving);
    cli_json_end_array(j);
    cli_json_key(j, "unit"), cli_json_string(j, log2 ? "bits" : "nats");
    cli_json_key(j, "mi"), cli_json_double(j, s->mi);
    cli_json_key(j, "nmi"), cli_json_double(j, s->nmi);
    cli_json_key(j, "ecc"), cli_json_double(j, s->ecc);
    cli_json_key(j, "h_fixed"), cli_json_double(j, s->h_fixed);
    cli_json_key(j, "h_moving"), cli_json_double(j, s->h_moving);
    cli_json_key(j, "h_joint"), cli_json_double(j, s->h_joint);
    cli_json_key(j, "n"), cli_json_u64(j, s->n);
    cli_json_key(j, "range_fixed");
    cli_json_begin_array(j);
    cli_json_i64(j, info->fixed_lo);
    cli_json_i64(j, info->fixed_hi);
    cli_json_end_array(j);
    cli_json_key(j, "range_moving");
    cli_json_begin_array(j);
    cli_json_i64(j, s->moving_lo);
    cli_json_i64(j, s->moving_hi);
    cli_json_end_array(j);
    cli_json_key(j, "device"), cli_json_string(j, info->device == DH_DEVICE_CUDA ? "cuda" : "cpu");
    cli_json_key(j, "status"), cli_json_string(j, status_name(s->status));
    cli_json_end_object(j);
    cli_json_end_line(j);
}

static void record_text(cli_sink *sink, const char *moving, int log2, const dh_mi_scores *s) {
    const char *unit = log2 ? "bits" : "nats";
    cli_sink_printf(sink, "%s\n  MI %.6g %s  NMI %.6g  ECC %.6g  H(F) %.6g  H(M) %.6g  "
                          "H(F,M) %.6g  n %llu  moving range %d:%d",
                    moving, s->mi, unit, s->nmi, s->ecc, s->h_fixed, s->h_moving, s->h_joint,
                    (unsigned long long)s->n, (int)s->moving_lo, (int)s->moving_hi);
    if (s->status)
        cli_sink_printf(sink, "  (%s)", status_name(s->status));
    cli_sink_char(sink, '\n');
}

/* The mask as bytes: 1 where the mask volume's stored value is non-zero. */
static uint8_t *mask_bytes(const dh_volume *m) {
    size_t n = dh_volume_sample_count(m);
    uint8_t *out = malloc(n ? n : 1);
    if (!out)
        return NULL;
    const uint16_t *raw = dh_volume_data(m); /* int16 and uint16 are both zero exactly at 0 */
    for (size_t i = 0; i < n; i++)
        out[i] = raw[i] != 0;
    return out;
}

static int mi_run(int argc, char **argv) {
    mi_options o;
    memset(&o, 0, sizeof o);
    dh_mi_params_init(&o.params);
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths) {
        fprintf(stderr, "dicomhist: mi: out of memory\n");
        return CLI_EXIT_INPUT;
    }
    size_t count = 0;
    int rc = parse_mi_args(argc, argv, &o, paths, &count);
    if (rc >= 0) {
        free(paths);
        return rc;
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *fixed_set = NULL, *mask_set = NULL;
    dh_mi_fixed *prepared = NULL;
    uint8_t *mask = NULL;
    int status = CLI_EXIT_INPUT;
    if (!ctx) {
        fprintf(stderr, "dicomhist: mi: out of memory\n");
        goto done;
    }
    fixed_set = load_one(ctx, paths[0]);
    if (!fixed_set)
        goto done;
    const dh_volume *fixed = dh_volume_set_volume(fixed_set, 0);
    char fixed_shape[64], shape[64];
    shape_text(fixed, fixed_shape, sizeof fixed_shape);
    if (o.mask) {
        mask_set = load_one(ctx, o.mask);
        if (!mask_set)
            goto done;
        const dh_volume *mv = dh_volume_set_volume(mask_set, 0);
        if (!same_shape(fixed, mv)) {
            shape_text(mv, shape, sizeof shape);
            char why[192];
            snprintf(why, sizeof why, "mask is %s but the fixed image %s is %s", shape,
                     paths[0], fixed_shape);
            cli_report_failure(o.mask, why);
            goto done;
        }
        if (!(mask = mask_bytes(mv))) {
            cli_report_failure(o.mask, "out of memory");
            goto done;
        }
    }
    if (dh_mi_fixed_create(ctx, dh_volume_data(fixed), dh_volume_is_signed(fixed),
                           dh_volume_sample_count(fixed), mask, &o.params, &prepared) != DH_OK) {
        cli_report_failure(paths[0], dh_ctx_error(ctx));
        goto done;
    }
    dh_mi_fixed_info info;
    dh_mi_fixed_get_info(prepared, &info);

    static cli_sink sink;
    cli_json j;
    cli_sink_init(&sink, stdout);
    cli_json_init(&j, &sink);
    status = CLI_EXIT_OK;
    for (size_t i = 1; i < count; i++) {
        dh_volume_set *set = load_one(ctx, paths[i]);
        if (!set) {
            status = CLI_EXIT_INPUT;
            continue;
        }
        const dh_volume *v = dh_volume_set_volume(set, 0);
        dh_mi_scores s;
        if (!same_shape(fixed, v)) {
            shape_text(v, shape, sizeof shape);
            char why[192];
            snprintf(why, sizeof why, "shape %s differs from the fixed image's %s (%s)", shape,
                     fixed_shape, paths[0]);
            cli_report_failure(paths[i], why);
            status = CLI_EXIT_INPUT;
        } else if (dh_mi_evaluate(ctx, prepared, dh_volume_data(v), dh_volume_is_signed(v),
                                  dh_volume_sample_count(v), 1, NULL, 0, &s) != DH_OK) {
            cli_report_failure(paths[i], dh_ctx_error(ctx));
            status = CLI_EXIT_INPUT;
        } else if (o.json) {
            record_json(&j, dh_volume_path(fixed), dh_volume_path(v), &info, o.params.log2, &s);
        } else {
            record_text(&sink, dh_volume_path(v), o.params.log2, &s);
        }
        dh_volume_set_free(set);
    }
    if (cli_sink_flush(&sink) != 0) {
        fprintf(stderr, "dicomhist: mi: cannot write the output\n");
        status = CLI_EXIT_INPUT;
    }
done:
    dh_mi_fixed_free(prepared);
    free(mask);
    dh_volume_set_free(mask_set);
    dh_volume_set_free(fixed_set);
    dh_ctx_free(ctx);
    free(paths);
    return status;
}

const cli_command cli_command_mi = {
    "mi",
    "mutual information (MI, NMI, ECC) between a fixed image and moving ones",
    mi_run,
    mi_help,
};
