/*
 * cli_args.c: the option reader and number parsers of cli_args.h.
 */
#include "cli_args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
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
        cli_usage_error(p->command, "unknown option '%s'", arg);
        return CLI_ERROR;
    }
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    for (const cli_option *o = options; o->name; o++) {
        if (strlen(o->name) != name_len || strncmp(o->name, name, name_len) != 0)
            continue;
        if (!o->takes_value) {
            if (eq) {
                cli_usage_error(p->command, "option '--%s' takes no value", o->name);
                return CLI_ERROR;
            }
            return o->id;
        }
        if (eq) {
            *value = eq + 1;
        } else if (p->index < p->argc) {
            /* The next word is the value even when it starts with '-': --range -1024:3071. */
            *value = p->argv[p->index++];
        } else {
            cli_usage_error(p->command, "option '--%s' needs a value", o->name);
            return CLI_ERROR;
        }
        return o->id;
    }
    cli_usage_error(p->command, "unknown option '--%.*s'", (int)name_len, name);
    return CLI_ERROR;
}

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

/* A whole finite number, nothing else: strtod alone would accept " 5", "inf", "0x10". */
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

int cli_parse_range(const char *text, double *lo, double *hi, const char **why) {
    const char *colon = strchr(text, ':');
    if (!colon || strchr(colon + 1, ':')) {
        *why = "expected LO:HI";
        return -1;
    }
    if (parse_number(text, (size_t)(colon - text), lo) != 0 ||
        parse_number(colon + 1, strlen(colon + 1), hi) != 0) {
        *why = "LO and HI must be finite numbers";
        return -1;
    }
    if (!(*lo < *hi)) {
        *why = "LO must be below HI (the range is [LO, HI))";
        return -1;
    }
    return 0;
}
