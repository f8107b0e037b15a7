// SPDX-License-Identifier: MIT
/*
 * volume_set_load.c: dh_volume_set_load, a plan of the inputs (plan_scan.c) with every series
 * read in order (plan_load.c) into one volume set. Hosts with archives too large to hold use the
 * plan directly.
 */
#include <stdio.h>
#include <stdlib.h>

#include "context.h"
#include "plan.h"
#include "volume_set.h"

dh_status dh_volume_set_from_plan(dh_ctx *ctx, const dh_plan *plan, const char *what,
                                  dh_volume_set **out)
{
    dh_volume_set *set = calloc(1, sizeof *set);
    if (!set)
        goto oom;
    /* Failures of the scan first, in the order found; then each series' own. */
    for (size_t i = 0; i < plan->file_count; i++) {
        const dh_plan_file *f = &plan->files[i];
        int rc = 0;
        if (f->state == DH_PLAN_FILE_FAILED)
            rc = dh_set_add_failure(set, f->path, f->status, "%s: %s", f->path,
                                    f->message ? f->message : "failed");
        else if (f->state == DH_PLAN_FILE_SKIPPED)
            rc = dh_set_add_skipped(set, f->path);
        if (rc != 0)
            goto oom;
    }
    for (size_t k = 0; k < plan->series_count; k++) {
        dh_volume_set *one = NULL;
        dh_status st = dh_plan_load_series(ctx, plan, k, &one);
        int rc = st == DH_OK ? dh_set_append(set, one) : -1;
        dh_volume_set_free(one);
        if (rc != 0)
            goto oom;
    }
    dh_ctx_clear(ctx);
    *out = set;
    return DH_OK;
oom:
    dh_volume_set_free(set);
    return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory while loading %s", what);
}

dh_status dh_volume_set_from_scan(dh_ctx *ctx, dh_status scanned, dh_plan *plan,
                                  const char *what, size_t count, dh_volume_set **out)
{
    if (scanned != DH_OK)
        return scanned;
    char text[64];
    snprintf(text, sizeof text, "%zu %s", count, what);
    dh_status st = dh_volume_set_from_plan(ctx, plan, text, out);
    dh_plan_free(plan);
    return st;
}

dh_status dh_volume_set_load(dh_ctx *ctx, const char *const *paths, size_t count,
                             dh_volume_set **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_set_load: out is NULL");
    *out = NULL;
    dh_plan *plan = NULL;
    dh_status scanned = dh_plan_scan(ctx, paths, count, &plan);
    return dh_volume_set_from_scan(ctx, scanned, plan, "path(s)", count, out);
}
