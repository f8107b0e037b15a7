// SPDX-License-Identifier: MIT
/*
 * cmd_equalize.h: what `dicomhist equalize` and `dicomhist window` share: one parser and one
 * runner (cmd_equalize.c), the operation deciding which options apply.
 */
#ifndef DH_CLI_CMD_EQUALIZE_H
#define DH_CLI_CMD_EQUALIZE_H

#include <stdio.h>

#include "dicomhist.h"

/* Runs `dicomhist equalize` (DH_EQ_EQUALIZE) or `dicomhist window` (DH_EQ_WINDOW_LEVEL), with
 * that command's --help text; argv[0] is the command's name. Returns the exit status. The
 * command's own file passes its help, so this runner never calls back into it. */
int cli_equalize_main(int argc, char **argv, dh_eq_operation operation, void (*help)(FILE *out));

/* The end of both --help texts: the options they share and the exit status. */
void cli_derived_help_tail(FILE *out);

#endif /* DH_CLI_CMD_EQUALIZE_H */
