// SPDX-License-Identifier: MIT
/*
 * main.c: the `dicomhist` command's entry point. A table of subcommands, each a name, a
 * one-line summary, a run function and a help function (cli_commands.h); main finds the row
 * and hands over the rest of the command line. Global --help, --version and `help COMMAND`.
 */
#include <stdio.h>
#include <string.h>

#include "cli_args.h"
#include "cli_commands.h"
#include "dicomhist.h"

static const cli_command *const commands[] = {
    &cli_command_info,
    &cli_command_histogram,
    &cli_command_mi,
    &cli_command_equalize,
    &cli_command_window,
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < COMMAND_COUNT; i++) {
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    }
    return NULL;
}

static void global_help(FILE *out) {
    fprintf(out,
            "Usage: dicomhist COMMAND [OPTION]... PATH...\n"
            "       dicomhist --help | --version\n"
            "\n"
            "Histograms of 12/16-bit DICOM X-ray and CT slices and series.\n"
            "PATH is a DICOM file, a directory (read recursively; files are grouped into\n"
            "series by SeriesInstanceUID), or several of either.\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out,
            "\n"
            "Exit status: 0 when every input succeeded, 1 when some input or output failed\n"
            "(the others are still processed and reported), 2 for usage errors.\n"
            "Run 'dicomhist COMMAND --help' for the options of a command.\n");
}

static void version(FILE *out) {
    fprintf(out, "dicomhist %s (library %s, CUDA %s)\n", DH_VERSION_STRING,
            dh_version_string(), dh_cuda_available() ? "available" : "not available");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        global_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0)
        return cli_show_help(global_help);
    if (strcmp(first, "--version") == 0)
        return cli_show_help(version);
    if (strcmp(first, "help") == 0) {
        if (argc == 2)
            return cli_show_help(global_help);
        const cli_command *c = find_command(argv[2]);
        if (!c)
            return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        return cli_show_help(c->help);
    }
    if (first[0] == '-')
        return cli_usage_error(NULL, "unknown option '%s' (a command comes first)", first);
    const cli_command *c = find_command(first);
    if (!c)
        return cli_usage_error(NULL, "unknown command '%s'", first);
    return c->run(argc - 1, argv + 1);
}
