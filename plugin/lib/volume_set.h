// SPDX-License-Identifier: MIT
/*
 * volume_set.h: what a dh_volume_set holds, for the library's own files: volumes, and the
 * inputs that failed or were skipped beside them. Filled by plan_load.c (one series) and
 * volume_set_load.c (a whole plan).
 */
#ifndef DH_PLUGIN_VOLUME_SET_H
#define DH_PLUGIN_VOLUME_SET_H

#include "dicomhist.h"

typedef struct dh_set_failure {
    char *path;
    dh_status status;
    char *message;
} dh_set_failure;

struct dh_volume_set {
    dh_volume **volumes;
    size_t count;
    dh_set_failure *failures;
    size_t failure_count;
    char **skipped;
    size_t skipped_count;
};

/* Each returns 0, or -1 when out of memory. add_volume takes the volume on success. */
int dh_set_add_failure(dh_volume_set *set, const char *path, dh_status status, const char *fmt,
                       ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int dh_set_add_skipped(dh_volume_set *set, const char *path);
int dh_set_add_volume(dh_volume_set *set, dh_volume *volume);
/* Moves everything of `from` to the end of `to` (from is left empty); -1 when out of memory. */
int dh_set_append(dh_volume_set *to, dh_volume_set *from);

#endif /* DH_PLUGIN_VOLUME_SET_H */
