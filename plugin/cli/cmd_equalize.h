// SPDX-License-Identifier: MIT
/*
 * cmd_equalize.h: what `dicomhist equalize` and `dicomhist window` share: one parser and one
 * runner (cmd_equalize.c), the operation deciding which options apply.
 */
#ifndef DH_CLI_CMD_EQUALIZE_H
#define DH_CLI_CMD_EQUALIZE_H

#include <stdio.h>

#include "dicomhist.h"

/* Runs `dicomhist equalize` (DH_EQ_EQUALIZE) or `dicomhist window` (DH_EQ_WINDOW_LEVEL);
 * argv[0] is the command's name. Returns the exit status. */
int cli_equalize_main(int argc, char **argv, dh_eq_operation operation);

/* `dicomhist window --help` (cmd_window.c). */
void cli_window_help(FILE *out);
/* The end of both --help texts: the options they share and the exit status. */
void cli_derived_help_tail(FILE *out);

#endif /* DH_CLI_CMD_EQUALIZE_H */
