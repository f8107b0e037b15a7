// SPDX-License-Identifier: MIT
/*
 * volume_set.c: dh_volume_set, volumes with the inputs that failed or were skipped beside them:
 * how one is filled (by plan_load.c and volume_set_load.c), read and freed.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "plan.h"
#include "volume.h"
#include "volume_set.h"

int dh_set_add_failure(dh_volume_set *set, const char *path, dh_status status, const char *fmt,
                       ...)
{
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    dh_set_failure *f = realloc(set->failures, (set->failure_count + 1) * sizeof *f);
    if (!f)
        return -1;
    set->failures = f;
    f += set->failure_count;
    f->path = strdup(path);
    f->message = strdup(message);
    f->status = status;
    if (!f->path || !f->message) {
        free(f->path), free(f->message);
        return -1;
    }
    set->failure_count++;
    return 0;
}

int dh_set_add_skipped(dh_volume_set *set, const char *path)
{
    char **s = realloc(set->skipped, (set->skipped_count + 1) * sizeof *s);
    if (!s)
        return -1;
    set->skipped = s;
    if (!(s[set->skipped_count] = strdup(path)))
        return -1;
    set->skipped_count++;
    return 0;
}

int dh_set_add_volume(dh_volume_set *set, dh_volume *v)
{
    dh_volume **p = realloc(set->volumes, (set->count + 1) * sizeof *p);
    if (!p)
        return -1;
    set->volumes = p;
    set->volumes[set->count++] = v;
    return 0;
}

int dh_set_append(dh_volume_set *to, dh_volume_set *from)
{
    for (size_t i = 0; i < from->count; i++) {
        if (dh_set_add_volume(to, from->volumes[i]) != 0)
            return -1;
        from->volumes[i] = NULL;
    }
    for (size_t i = 0; i < from->failure_count; i++)
        if (dh_set_add_failure(to, from->failures[i].path, from->failures[i].status, "%s",
                               from->failures[i].message) != 0)
            return -1;
    for (size_t i = 0; i < from->skipped_count; i++)
        if (dh_set_add_skipped(to, from->skipped[i]) != 0)
            return -1;
    return 0;
}

void dh_volume_set_free(dh_volume_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->count; i++)
        dh_volume_free(set->volumes[i]);
    for (size_t i = 0; i < set->failure_count; i++) {
        free(set->failures[i].path);
        free(set->failures[i].message);
    }
    for (size_t i = 0; i < set->skipped_count; i++)
        free(set->skipped[i]);
    free(set->volumes);
    free(set->failures);
    free(set->skipped);
    free(set);
}

size_t dh_volume_set_count(const dh_volume_set *set) { return set ? set->count : 0; }
size_t dh_volume_set_failure_count(const dh_volume_set *set) { return set ? set->failure_count : 0; }
size_t dh_volume_set_skipped_count(const dh_volume_set *set) { return set ? set->skipped_count : 0; }

const dh_volume *dh_volume_set_volume(const dh_volume_set *set, size_t i)
{
    return set && i < set->count ? set->volumes[i] : NULL;
}

const char *dh_volume_set_failure_path(const dh_volume_set *set, size_t i)
{
    return set && i < set->failure_count ? set->failures[i].path : "";
}

dh_status dh_volume_set_failure_status(const dh_volume_set *set, size_t i)
{
    return set && i < set->failure_count ? set->failures[i].status : DH_OK;
}

const char *dh_volume_set_failure_message(const dh_volume_set *set, size_t i)
{
    return set && i < set->failure_count ? set->failures[i].message : "";
}

const char *dh_volume_set_skipped_path(const dh_volume_set *set, size_t i)
{
    return set && i < set->skipped_count ? set->skipped[i] : "";
}
