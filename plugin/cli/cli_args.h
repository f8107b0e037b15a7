/*
 * cli_args.h: the command line, read the same way by every subcommand. Long options as
 * `--name value` or `--name=value`, `-h` for `--help`, `--` ending the options; operands (the
 * paths) may come before, between or after options. Bad input is a usage error: a message on
 * stderr naming the command, a pointer to its --help, and exit status 2.
 */
#ifndef DH_CLI_ARGS_H
#define DH_CLI_ARGS_H

#include <stdint.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_INPUT 1 /* some input (or output) failed; the rest was still done */
#define CLI_EXIT_USAGE 2

/* One long option a command accepts. */
typedef struct cli_option {
    const char *name; /* without the dashes: "bins" */
    int takes_value;
    int id; /* what cli_next returns for it; positive */
} cli_option;

/* What cli_next returns besides an option id. */
enum {
    CLI_END = 0,      /* nothing left */
    CLI_OPERAND = -1, /* a path: *value points at it */
    CLI_ERROR = -2,   /* a usage error, already reported */
    CLI_HELP = -3     /* -h or --help */
};

typedef struct cli_parser {
    const char *command; /* "histogram", for messages */
    int argc;
    char **argv;
    int index;
    int options_done; /* after "--" */
} cli_parser;

/* argv[0] is the command's own name; reading starts at argv[1]. */
void cli_parser_init(cli_parser *p, const char *command, int argc, char **argv);
/* The next option (its id, with *value set when it takes one), operand, end or error.
 * `options` ends with an entry whose name is NULL. */
int cli_next(cli_parser *p, const cli_option *options, const char **value);

/* Reports a usage error for `command` and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A whole decimal integer in [min, max]; returns 0, or -1 when the text is not one. */
int cli_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *out);
/* "LO:HI" with two finite numbers and LO < HI; returns 0, or -1 with a reason in *why. */
int cli_parse_range(const char *text, double *lo, double *hi, const char **why);

#endif /* DH_CLI_ARGS_H */
