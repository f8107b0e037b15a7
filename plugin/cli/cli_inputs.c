/*
 * cli_inputs.c: the PATH operands as volumes, and failures reported the one way every command
 * reports them (`dicomhist: FILE: reason`).
 */
#include "cli_commands.h"

#include <string.h>

void cli_report_failure(const char *what, const char *message) {
    size_t len = strlen(what);
    if (!message || !*message)
        message = "failed";
    /* Library messages name the file themselves; say it once. */
    if (len > 0 && strncmp(message, what, len) == 0 && message[len] == ':' &&
        message[len + 1] == ' ')
        message += len + 2;
    fprintf(stderr, "dicomhist: %s: %s\n", what, message);
}

dh_volume_set *cli_load_inputs(dh_ctx *ctx, const char *const *paths, size_t count, int *failed) {
    dh_volume_set *set = NULL;
    *failed = 0;
    dh_status st = dh_volume_set_load(ctx, paths, count, &set);
    if (st != DH_OK) {
        cli_report_failure(count == 1 ? paths[0] : "inputs", dh_ctx_error(ctx));
        dh_volume_set_free(set);
        *failed = 1;
        return NULL;
    }
    size_t failures = dh_volume_set_failure_count(set);
    for (size_t i = 0; i < failures; i++) {
        cli_report_failure(dh_volume_set_failure_path(set, i),
                           dh_volume_set_failure_message(set, i));
    }
    if (failures > 0)
        *failed = 1;
    return set;
}

void cli_modality_range(const dh_volume *v, double *lo, double *hi) {
    int32_t smin = 0, smax = 0;
    dh_volume_stored_range(v, &smin, &smax);
    double slope = dh_volume_rescale_slope(v), intercept = dh_volume_rescale_intercept(v);
    double a = slope * smin + intercept, b = slope * smax + intercept;
    *lo = a < b ? a : b;
    *hi = a < b ? b : a;
}
