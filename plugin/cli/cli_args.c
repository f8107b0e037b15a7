// SPDX-License-Identifier: MIT
/*
 * cli_args.c: the option reader, the shared options and the number parsers of cli_args.h.
 */
#include "cli_args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_parser_init(cli_parser *p, const char *command, int argc, char **argv) {
    p->command = command;
    p->argc = argc;
    p->argv = argv;
    p->index = 1;
    p->options_done = 0;
}

int cli_usage_error(const char *command, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "dicomhist: %s%s", command ? command : "", command ? ": " : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'dicomhist %s%s--help'.\n", command ? command : "", command ? " " : "");
    return CLI_EXIT_USAGE;
}

/* The option's value: after '=' when given so, else the next word, even when it starts with a
 * dash (--range -1024:3071). `spelled` is the option as typed, for the message. */
static int option_value(cli_parser *p, const cli_option *o, const char *spelled, const char *eq,
                        const char **value) {
    if (!o->takes_value) {
        if (eq) {
            cli_usage_error(p->command, "option '%s' takes no value", spelled);
            return CLI_ERROR;
        }
        return o->id;
    }
    if (eq) {
        *value = eq + 1;
    } else if (p->index < p->argc) {
        *value = p->argv[p->index++];
    } else {
        cli_usage_error(p->command, "option '%s' needs a value", spelled);
        return CLI_ERROR;
    }
    return o->id;
}

int cli_next(cli_parser *p, const cli_option *options, const char **value) {
    *value = NULL;
    if (p->index >= p->argc)
        return CLI_END;
    const char *arg = p->argv[p->index++];
    /* "-" alone is an operand by convention (a file named "-"), as is anything after "--". */
    if (p->options_done || arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        return CLI_OPERAND;
    }
    if (strcmp(arg, "--") == 0) {
        p->options_done = 1;
        return cli_next(p, options, value);
    }
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
        return CLI_HELP;
    if (arg[1] != '-') {
        /* Short options stand alone: "-o DIR", never "-oDIR" or bundled. */
        for (const cli_option *o = options; o->name && arg[2] == '\0'; o++) {
            if (o->short_name == arg[1])
                return option_value(p, o, arg, NULL, value);
        }
        cli_usage_error(p->command, "unknown option '%s'", arg);
        return CLI_ERROR;
    }
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    for (const cli_option *o = options; o->name; o++) {
        if (strlen(o->name) == name_len && strncmp(o->name, name, name_len) == 0) {
            char spelled[64];
            snprintf(spelled, sizeof spelled, "--%s", o->name);
            return option_value(p, o, spelled, eq, value);
        }
    }
    cli_usage_error(p->command, "unknown option '--%.*s'", (int)name_len, name);
    return CLI_ERROR;
}

/* ------------------------------------------------------------------ the whole command line */

static int read_device(const char *command, const char *value, dh_device *out) {
    if (strcmp(value, "auto") == 0)
        *out = DH_DEVICE_AUTO;
    else if (strcmp(value, "cpu") == 0)
        *out = DH_DEVICE_CPU;
    else if (strcmp(value, "cuda") == 0)
        *out = DH_DEVICE_CUDA;
    else
        return cli_usage_error(command, "--device '%s': expected auto, cpu or cuda", value);
    return -1;
}

/* "I/N" with 0 <= I < N. */
static int parse_shard(const char *text, uint32_t *index, uint32_t *count) {
    const char *slash = strchr(text, '/');
    char first[16];
    size_t len = slash ? (size_t)(slash - text) : 0;
    if (!slash || len == 0 || len >= sizeof first)
        return -1;
    memcpy(first, text, len);
    first[len] = '\0';
    if (text_parse_u32(first, 0, 1000000, index) != 0 ||
        text_parse_u32(slash + 1, 1, 1000000, count) != 0 || *index >= *count)
        return -1;
    return 0;
}

/* A list of modality codes: letters and digits, separated by commas, none empty. */
static int valid_modalities(const char *text) {
    if (!*text)
        return 0;
    for (const char *c = text; *c; c++) {
        int comma = *c == ',';
        if (!comma && !isalnum((unsigned char)*c) && *c != '_')
            return 0;
        if (comma && (c == text || c[1] == '\0' || c[1] == ','))
            return 0;
    }
    return 1;
}

static int read_batch_option(const char *command, int id, const char *value,
                             cli_batch_options *b) {
    switch (id) {
    case CLI_OPT_JOBS:
        if (text_parse_u32(value, 1, 4096, &b->jobs) != 0)
            return cli_usage_error(command, "--jobs '%s': expected a whole number from 1 to 4096",
                                   value);
        return -1;
    case CLI_OPT_PROGRESS:
        b->progress = 1;
        return -1;
    case CLI_OPT_MODALITY:
        if (!valid_modalities(value))
            return cli_usage_error(command, "--modality '%s': expected codes such as CR,DX", value);
        b->modalities = value;
        return -1;
    case CLI_OPT_SHARD:
        b->shard_given = 1;
        b->shard_auto = strcmp(value, "auto") == 0;
        if (!b->shard_auto && parse_shard(value, &b->shard_index, &b->shard_count) != 0)
            return cli_usage_error(command, "--shard '%s': expected I/N with 0 <= I < N, or auto",
                                   value);
        return -1;
    case CLI_OPT_SHARD_COUNT:
        if (text_parse_u32(value, 1, 1000000, &b->shard_count_option) != 0)
            return cli_usage_error(command, "--shard-count '%s': expected a whole number >= 1",
                                   value);
        return -1;
    case CLI_OPT_FORCE:
        b->force = 1;
        return -1;
    case CLI_OPT_DECODE:
        if (strcmp(value, "cpu") != 0 && strcmp(value, "auto") != 0)
            return cli_usage_error(command, "--decode '%s': expected cpu or auto", value);
        b->cpu_decode = strcmp(value, "cpu") == 0;
        return -1;
    case CLI_OPT_DRY_RUN:
        b->dry_run = 1;
        return -1;
    case CLI_OPT_STATS:
        b->stats = 1;
        return -1;
    default:
        return cli_usage_error(command, "internal: unhandled batch option");
    }
}

int cli_read_command_line(cli_command_line *cl, const char *command, int argc, char **argv,
                          const cli_option *options, void (*help)(FILE *),
                          cli_option_reader read_option, void *state) {
    memset(cl, 0, sizeof *cl);
    cl->command = command;
    cl->device = DH_DEVICE_AUTO;
    /* At most argc - 1 operands; one more keeps calloc away from a zero size. */
    cl->paths = calloc((size_t)argc + 1, sizeof *cl->paths);
    if (!cl->paths) {
        fprintf(stderr, "dicomhist: out of memory\n");
        return CLI_EXIT_INPUT;
    }
    cli_parser p;
    cli_parser_init(&p, command, argc, argv);
    for (;;) {
        const char *value;
        int id = cli_next(&p, options, &value), rc = -1;
        switch (id) {
        case CLI_END:
            return -1;
        case CLI_ERROR:
            return CLI_EXIT_USAGE;
        case CLI_HELP:
            return cli_show_help(help);
        case CLI_OPERAND:
            cl->paths[cl->path_count++] = value;
            break;
        case CLI_OPT_JSON:
            cl->json = 1;
            break;
        case CLI_OPT_DEVICE:
            rc = read_device(command, value, &cl->device);
            break;
        case CLI_OPT_JOBS:
        case CLI_OPT_PROGRESS:
        case CLI_OPT_MODALITY:
        case CLI_OPT_SHARD:
        case CLI_OPT_SHARD_COUNT:
        case CLI_OPT_FORCE:
        case CLI_OPT_DRY_RUN:
        case CLI_OPT_DECODE:
        case CLI_OPT_STATS:
            rc = read_batch_option(command, id, value, &cl->batch);
            break;
        default:
            rc = read_option ? read_option(state, command, id, value)
                             : cli_usage_error(command, "internal: unhandled option");
            break;
        }
        if (rc >= 0)
            return rc;
    }
}

void cli_command_line_free(cli_command_line *cl) {
    free(cl->paths);
    cl->paths = NULL;
    cl->path_count = 0;
}

int cli_show_help(void (*help)(FILE *)) {
    help(stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "dicomhist: standard output: write error: %s\n", strerror(errno ? errno : EIO));
        return CLI_EXIT_INPUT;
    }
    return CLI_EXIT_OK;
}
