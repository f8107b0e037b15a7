// SPDX-License-Identifier: MIT
/*
 * plan_memory.c: dh_plan_scan_memory and dh_volume_set_load_memory, a plan of DICOM files held
 * in memory (a PACS hands over instances, not paths): each item becomes a file of the plan named
 * by the caller, read from its bytes where a file would be read from disk, and grouped, ordered
 * and loaded exactly as files are (plan_scan.c, plan_load.c). Nothing is copied: the plan and the
 * volumes loaded from it borrow the caller's bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "plan.h"
#include "volume_set.h"

static int by_name(const void *a, const void *b)
{
    const dh_plan_file *fa = *(const dh_plan_file *const *)a, *fb = *(const dh_plan_file *const *)b;
    int c = strcmp(fa->path, fb->path);
    return c ? c : (fa > fb) - (fa < fb);
}

/* A name given twice would make two sources one (the derived writers find a slice's source by
 * its name): every item after the first of a name fails. Returns 0, or -1 when out of memory. */
static int refuse_repeated_names(dh_plan *p)
{
    if (p->file_count < 2)
        return 0;
    dh_plan_file **sorted = malloc(p->file_count * sizeof *sorted);
    if (!sorted)
        return -1;
    for (size_t i = 0; i < p->file_count; i++)
        sorted[i] = &p->files[i];
    qsort(sorted, p->file_count, sizeof *sorted, by_name);
    int rc = 0;
    size_t first = 0; /* the earliest item of the current name: names sort by index within */
    for (size_t i = 1; i < p->file_count && rc == 0; i++) {
        dh_plan_file *f = sorted[i];
        if (strcmp(f->path, sorted[i - 1]->path) != 0) {
            first = i;
            continue;
        }
        f->state = DH_PLAN_FILE_FAILED;
        f->status = DH_ERR_INVALID_ARGUMENT;
        size_t n = 64;
        if (!(f->message = malloc(n)))
            rc = -1;
        else
            snprintf(f->message, n, "the name of item %zu is given again",
                     (size_t)(sorted[first] - p->files));
    }
    free(sorted);
    return rc;
}

dh_status dh_plan_scan_memory(dh_ctx *ctx, const dh_memory_item *items, size_t count,
                              dh_plan **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_plan_scan_memory: out is NULL");
    *out = NULL;
    if (!items || count == 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_plan_scan_memory: no items given");
    for (size_t i = 0; i < count; i++)
        if (!items[i].name || !items[i].name[0] || (!items[i].bytes && items[i].size > 0))
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "dh_plan_scan_memory: item %zu has %s", i,
                               items[i].name && items[i].name[0] ? "a size but no bytes"
                                                                 : "no name");
    dh_plan *p = calloc(1, sizeof *p);
    if (!p || !(p->files = calloc(count, sizeof *p->files)))
        goto oom;
    static const unsigned char nothing[1] = {0};
    for (size_t i = 0; i < count; i++) {
        dh_plan_file *f = &p->files[i];
        f->series = SIZE_MAX;
        f->state = DH_PLAN_FILE_SERIES;
        /* An empty item keeps a non-NULL pointer: it is still read as memory (and fails as an
         * empty buffer), never as a file of its name. */
        f->bytes = items[i].bytes ? items[i].bytes : nothing;
        f->size = items[i].size;
        f->explicit_input = 1;
        p->file_count++;
        if (!(f->path = strdup(items[i].name)) || !(f->output_name = strdup(items[i].name)))
            goto oom;
    }
    if (refuse_repeated_names(p) != 0 || dh_plan_finish(ctx, p) != 0)
        goto oom;
    dh_ctx_clear(ctx);
    *out = p;
    return DH_OK;
oom:
    dh_plan_free(p);
    return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory while scanning %zu item(s)", count);
}

dh_status dh_volume_set_load_memory(dh_ctx *ctx, const dh_memory_item *items, size_t count,
                                    dh_volume_set **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_set_load_memory: out is NULL");
    *out = NULL;
    dh_plan *plan = NULL;
    dh_status scanned = dh_plan_scan_memory(ctx, items, count, &plan);
    return dh_volume_set_from_scan(ctx, scanned, plan, "item(s)", count, out);
}
