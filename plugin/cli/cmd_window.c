// SPDX-License-Identifier: MIT
/*
 * cmd_window.c: `dicomhist window`, DICOM window/level (LINEAR, LINEAR_EXACT or SIGMOID VOI
 * function) without equalization, written as derived DICOM like `equalize` (cmd_equalize.c
 * runs both).
 */
#include "cli_commands.h"
#include "cmd_equalize.h"

static void window_help(FILE *out) {
    fprintf(out,
            "Usage: dicomhist window --window SPEC [OPTION]... -o OUTDIR PATH...\n"
            "\n"
            "Window/level of each volume in the PATHs by a DICOM VOI function on modality\n"
            "values (ymin 0, ymax 2^bits - 1, truncated), written as a derived DICOM series\n"
            "into OUTDIR (new UIDs, DERIVED\\SECONDARY, sources referenced, no stale window).\n"
            "\n"
            "Options:\n"
            "  -o, --output DIR       where the derived files go, placed as 'cp -r' would,\n"
            "                         with DIR/dicomhist-manifest.jsonl; never inside a PATH\n"
            "  --window C:W           center and width (modality units), WIDTH >= 1\n"
            "  --window file          the file's own: its first VOI LUT (the table itself,\n"
            "                         scaled to the output bits) when it has a VOI LUT\n"
            "                         Sequence, else its first WindowCenter/Width\n"
            "  --window minmax        lowest to highest value present (center (LO+HI+1)/2,\n"
            "                         width HI-LO+1, DCMTK's min-max window)\n"
            "  --window percentile:P  cut P%% of the pixels at each end, symmetric\n"
            "  --window-range LO:HI   the window as a closed range of modality values\n"
            "  --function linear|linear-exact|sigmoid\n"
            "                         the VOI LUT function (default linear)\n"
            "  --mode volume|slice    one window for the volume (default) or per slice\n");
    cli_derived_help_tail(out);
}

static int window_run(int argc, char **argv) {
    return cli_equalize_main(argc, argv, DH_EQ_WINDOW_LEVEL, window_help);
}

const cli_command cli_command_window = {
    "window",
    "DICOM window/level (LINEAR, LINEAR_EXACT, SIGMOID) written as derived DICOM",
    window_run,
    window_help,
};
