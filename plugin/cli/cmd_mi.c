// SPDX-License-Identifier: MIT
/*
 * cmd_mi.c: `dicomhist mi`, mutual information between a fixed image or volume and each moving
 * one of the same shape: MI, NMI, ECC and the three entropies over a joint histogram (dicomhist.h
 * section 5). One JSON line per moving input with --json, one line for people otherwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_commands.h"

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
            "                        where to compute (default auto: the GPU when usable, else\n"
            "                        the CPU; both give the same bits); cuda without a usable\n"
            "                        GPU is an error\n"
            "  --json                one JSON object per moving input, one per line, with\n"
            "                        fixed, moving, bins [BF, BM], unit, mi, nmi, ecc,\n"
            "                        h_fixed, h_moving, h_joint, n, range_fixed,\n"
            "                        range_moving, device and status (\"ok\", \"empty\": no\n"
            "                        pixel counted, \"zero_joint_entropy\": one joint bin\n"
            "                        holds everything); undefined values are null\n"
            "  -h, --help            this text\n"
            "\n"
            "MI = H(F) + H(M) - H(F,M); NMI = (H(F) + H(M)) / H(F,M) (Studholme, 1..2);\n"
            "ECC = 2 MI / (H(F) + H(M)).\n"
            "\n"
            "Inputs that cannot be read are reported on stderr as 'dicomhist: FILE: reason';\n"
            "the other moving inputs are still scored. Exit status: 0 all inputs done, 1 some\n"
            "failed (shapes that differ included), 2 usage error.\n");
}

/* The options of mi's own (--device and --json are read into the cli_command_line). */
typedef struct mi_options {
    dh_mi_params params;
    const char *mask;
} mi_options;

enum { OPT_BINS = 1, OPT_RANGE_FIXED, OPT_RANGE_MOVING, OPT_MASK, OPT_LOG2 };

static const cli_option mi_options_table[] = {
    {"bins", 1, OPT_BINS, 0},           {"range-fixed", 1, OPT_RANGE_FIXED, 0},
    {"range-moving", 1, OPT_RANGE_MOVING, 0}, {"mask", 1, OPT_MASK, 0},
    {"log2", 0, OPT_LOG2, 0},           CLI_OPTION_DEVICE,
    CLI_OPTION_JSON,                    {NULL, 0, 0, 0},
};

/* "B" or "BF:BM". */
static int parse_bins(const char *text, uint32_t *bf, uint32_t *bm) {
    const char *colon = strchr(text, ':');
    if (!colon)
        return text_parse_u32(text, DH_MI_MIN_BINS, DH_MI_MAX_BINS, bf) == 0 ? (*bm = *bf, 0) : -1;
    char first[32];
    size_t len = (size_t)(colon - text);
    if (len == 0 || len >= sizeof first)
        return -1;
    memcpy(first, text, len);
    first[len] = '\0';
    if (text_parse_u32(first, DH_MI_MIN_BINS, DH_MI_MAX_BINS, bf) != 0 ||
        text_parse_u32(colon + 1, DH_MI_MIN_BINS, DH_MI_MAX_BINS, bm) != 0)
        return -1;
    return 0;
}

/* "LO:HI" in whole stored values. */
static int parse_int_range(const char *option, const char *text, int32_t *lo, int32_t *hi) {
    const char *why = NULL;
    if (text_parse_stored_range(text, lo, hi, &why) != 0)
        return cli_usage_error("mi", "--%s '%s': %s", option, text, why);
    return 0;
}

/* One of mi's own options into the mi_options; -1 to go on, else the exit status. */
static int read_mi_option(void *state, const char *cmd, int id, const char *value) {
    mi_options *o = state;
    switch (id) {
    case OPT_BINS:
        if (parse_bins(value, &o->params.bins_fixed, &o->params.bins_moving) != 0)
            return cli_usage_error(cmd, "--bins '%s': expected B or BF:BM, each 2..256", value);
        return -1;
    case OPT_RANGE_FIXED:
        if (parse_int_range("range-fixed", value, &o->params.fixed_lo, &o->params.fixed_hi))
            return CLI_EXIT_USAGE;
        o->params.has_range_fixed = 1;
        return -1;
    case OPT_RANGE_MOVING:
        if (parse_int_range("range-moving", value, &o->params.moving_lo, &o->params.moving_hi))
            return CLI_EXIT_USAGE;
        o->params.has_range_moving = 1;
        return -1;
    case OPT_MASK:
        if (!*value)
            return cli_usage_error(cmd, "--mask needs a file name");
        o->mask = value;
        return -1;
    case OPT_LOG2:
        o->params.log2 = 1;
        return -1;
    default:
        return cli_usage_error(cmd, "internal: unhandled option");
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
        if (!failed) { /* a failed operand was reported already, by cli_load_inputs */
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

static void record_text(report_sink *sink, const char *moving, int log2, const dh_mi_scores *s) {
    const char *unit = log2 ? "bits" : "nats";
    report_sink_printf(sink, "%s\n  MI %.6g %s  NMI %.6g  ECC %.6g  H(F) %.6g  H(M) %.6g  "
                          "H(F,M) %.6g  n %llu  moving range %d:%d",
                    moving, s->mi, unit, s->nmi, s->ecc, s->h_fixed, s->h_moving, s->h_joint,
                    (unsigned long long)s->n, (int)s->moving_lo, (int)s->moving_hi);
    if (s->status)
        report_sink_printf(sink, "  (%s)", report_mi_status_name(s->status));
    report_sink_char(sink, '\n');
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

/* Scores each moving operand against the prepared fixed image, one record each. */
static int score_moving(const cli_command_line *cl, const mi_options *o, dh_ctx *ctx,
                        const dh_volume *fixed, dh_mi_fixed *prepared) {
    dh_mi_fixed_info info;
    dh_mi_fixed_get_info(prepared, &info);
    char fixed_shape[64], shape[64];
    shape_text(fixed, fixed_shape, sizeof fixed_shape);
    report_sink *out = cli_stdout_sink();
    report_json j;
    report_json_init(&j, out);
    int status = CLI_EXIT_OK;
    for (size_t i = 1; i < cl->path_count; i++) {
        const char *path = cl->paths[i];
        dh_volume_set *set = load_one(ctx, path);
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
                     fixed_shape, cl->paths[0]);
            cli_report_failure(path, why);
            status = CLI_EXIT_INPUT;
        } else if (dh_mi_evaluate(ctx, prepared, dh_volume_data(v), dh_volume_is_signed(v),
                                  dh_volume_sample_count(v), 1, NULL, 0, &s) != DH_OK) {
            cli_report_failure(path, dh_ctx_error(ctx));
            status = CLI_EXIT_INPUT;
        } else if (cl->json) {
            report_mi_record(&j, dh_volume_path(fixed), dh_volume_path(v), &info, o->params.log2,
                             &s);
            report_json_end_line(&j);
        } else {
            record_text(out, dh_volume_path(v), o->params.log2, &s);
        }
        dh_volume_set_free(set);
    }
    return status;
}

/* The mask operand as bytes over the fixed image; NULL after reporting why not. */
static uint8_t *load_mask(dh_ctx *ctx, const char *path, const dh_volume *fixed,
                          const char *fixed_path) {
    dh_volume_set *set = load_one(ctx, path);
    if (!set)
        return NULL;
    const dh_volume *mv = dh_volume_set_volume(set, 0);
    uint8_t *mask = NULL;
    if (!same_shape(fixed, mv)) {
        char shape[64], fixed_shape[64], why[192];
        shape_text(mv, shape, sizeof shape);
        shape_text(fixed, fixed_shape, sizeof fixed_shape);
        snprintf(why, sizeof why, "mask is %s but the fixed image %s is %s", shape, fixed_path,
                 fixed_shape);
        cli_report_failure(path, why);
    } else if (!(mask = mask_bytes(mv))) {
        cli_report_failure(path, "out of memory");
    }
    dh_volume_set_free(set);
    return mask;
}

static int mi_run(int argc, char **argv) {
    mi_options o;
    memset(&o, 0, sizeof o);
    dh_mi_params_init(&o.params);
    cli_command_line cl;
    int status = cli_read_command_line(&cl, "mi", argc, argv, mi_options_table, mi_help,
                                       read_mi_option, &o);
    if (status < 0 && cl.path_count < 2)
        status = cli_usage_error("mi", "expected FIXED and at least one MOVING");
    if (status >= 0) {
        cli_command_line_free(&cl);
        return status;
    }
    o.params.device = cl.device;
    dh_ctx *ctx = NULL;
    dh_volume_set *fixed_set = NULL;
    dh_mi_fixed *prepared = NULL;
    uint8_t *mask = NULL;
    status = cli_open_context(cl.device, &ctx);
    if (status >= 0)
        goto done;
    status = CLI_EXIT_INPUT;
    fixed_set = load_one(ctx, cl.paths[0]);
    if (!fixed_set)
        goto done;
    const dh_volume *fixed = dh_volume_set_volume(fixed_set, 0);
    if (o.mask && !(mask = load_mask(ctx, o.mask, fixed, cl.paths[0])))
        goto done;
    if (dh_mi_fixed_create(ctx, dh_volume_data(fixed), dh_volume_is_signed(fixed),
                           dh_volume_sample_count(fixed), mask, &o.params, &prepared) != DH_OK) {
        cli_report_failure(cl.paths[0], dh_ctx_error(ctx));
        goto done;
    }
    status = score_moving(&cl, &o, ctx, fixed, prepared);
    if (cli_stdout_finish() != 0)
        status = CLI_EXIT_INPUT;
done:
    dh_mi_fixed_free(prepared);
    free(mask);
    dh_volume_set_free(fixed_set);
    dh_ctx_free(ctx);
    cli_command_line_free(&cl);
    return status;
}

const cli_command cli_command_mi = {
    "mi",
    "mutual information (MI, NMI, ECC) between a fixed image and moving ones",
    mi_run,
    mi_help,
};
