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

/* ------------------------------------------------------------------ numbers */

int cli_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *out) {
    if (!text || !isdigit((unsigned char)text[0]))
        return -1; /* no sign, no space, no empty string */
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* The first len characters of text as a whole finite number, nothing else: strtod alone would
 * accept " 5", "inf", "0x10". */
static int parse_number(const char *text, size_t len, double *out) {
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (!strchr("0123456789+-.eE", buf[i]))
            return -1;
    }
    errno = 0;
    char *end;
    double v = strtod(buf, &end);
    if (errno == ERANGE || *end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *text, double *out) {
    return parse_number(text, strlen(text), out);
}

/* Splits "A:B" at its one colon; returns the colon, or NULL when there is not exactly one. */
static const char *pair_colon(const char *text) {
    const char *colon = strchr(text, ':');
    return colon && !strchr(colon + 1, ':') ? colon : NULL;
}

int cli_parse_pair(const char *text, double *a, double *b) {
    const char *colon = pair_colon(text);
    if (!colon || parse_number(text, (size_t)(colon - text), a) != 0 ||
        parse_number(colon + 1, strlen(colon + 1), b) != 0)
        return -1;
    return 0;
}

int cli_parse_range(const char *text, double *lo, double *hi, const char **why) {
    if (!pair_colon(text)) {
        *why = "expected LO:HI";
        return -1;
    }
    if (cli_parse_pair(text, lo, hi) != 0) {
        *why = "LO and HI must be finite numbers";
        return -1;
    }
    if (!(*lo < *hi)) {
        *why = "LO must be below HI (the range is [LO, HI))";
        return -1;
    }
    return 0;
}
