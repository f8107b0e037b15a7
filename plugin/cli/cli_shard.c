// SPDX-License-Identifier: MIT
/*
 * cli_shard.c: the shard of cli_shard.h: FNV-1a (64-bit) of the identity, modulo N. Not a
 * security hash: it only has to spread series evenly and be the same on every machine.
 */
#include "cli_shard.h"

#include <stdlib.h>
#include <string.h>

uint32_t cli_shard_of(const char *identity, uint32_t count)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const unsigned char *c = (const unsigned char *)identity; *c; c++) {
        h ^= *c;
        h *= 0x100000001b3u;
    }
    return count ? (uint32_t)(h % count) : 0;
}

/* The scheduler's variables as whole numbers. `has` says which are set; a set one that is not a
 * number is a usage error, never taken for absent (JOB_COMPLETION_INDEX=x is not "unset"). */
enum { SLURM_ID, SLURM_MIN, SLURM_MAX, SLURM_COUNT, SLURM_STEP, K8S_INDEX, VARIABLES };
static const char *const variable_names[VARIABLES] = {
    "SLURM_ARRAY_TASK_ID",    "SLURM_ARRAY_TASK_MIN",  "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX"};

static int read_variables(const char *command, uint32_t value[VARIABLES], int has[VARIABLES])
{
    for (int i = 0; i < VARIABLES; i++) {
        const char *v = getenv(variable_names[i]);
        has[i] = 0;
        value[i] = 0;
        if (!v || !*v)
            continue;
        if (text_parse_u32(v, 0, 100000000, &value[i]) != 0)
            return cli_usage_error(command, "--shard auto: %s is '%s', not a whole number",
                                   variable_names[i], v);
        has[i] = 1;
    }
    return -1;
}

int cli_shard_resolve(const char *command, cli_batch_options *b)
{
    if (!b->shard_given) {
        if (b->shard_count_option)
            return cli_usage_error(command, "--shard-count goes with --shard auto");
        b->shard_index = 0;
        b->shard_count = 1;
        return -1;
    }
    if (!b->shard_auto) {
        if (b->shard_count_option)
            return cli_usage_error(command, "--shard-count goes with --shard auto, not --shard I/N");
        return -1;
    }
    uint32_t value[VARIABLES];
    int has[VARIABLES];
    int status = read_variables(command, value, has);
    if (status >= 0)
        return status;
    if (has[SLURM_ID]) {
        const uint32_t id = value[SLURM_ID], min = value[SLURM_MIN], max = value[SLURM_MAX];
        const int has_max = has[SLURM_MIN] && has[SLURM_MAX] && max >= min;
        uint32_t count = value[SLURM_COUNT];
        /* ID - MIN is the index only in a contiguous range: with steps or a list (0-30:2, 1,4,9)
         * some indices would never run, silently. */
        if ((has[SLURM_STEP] && value[SLURM_STEP] != 1) ||
            (has_max && has[SLURM_COUNT] && count != max - min + 1))
            return cli_usage_error(command,
                                   "--shard auto: the Slurm array %u-%u holds %u task(s), not a "
                                   "contiguous range (an array with steps or a list needs "
                                   "--shard I/N)", min, max, count);
        if (!has[SLURM_COUNT] && has_max)
            count = max - min + 1;
        if (b->shard_count_option)
            count = b->shard_count_option;
        if (id < min || count == 0 || id - min >= count)
            return cli_usage_error(command,
                                   "--shard auto: SLURM_ARRAY_TASK_ID %u does not fit a range "
                                   "of %u task(s) from %u (an array with steps or a list needs "
                                   "--shard I/N)", id, count, min);
        b->shard_index = id - min;
        b->shard_count = count;
        return -1;
    }
    if (has[K8S_INDEX]) {
        const uint32_t id = value[K8S_INDEX];
        if (!b->shard_count_option)
            return cli_usage_error(command, "--shard auto under a Kubernetes Indexed Job needs "
                                            "--shard-count N (the Job's completions)");
        if (id >= b->shard_count_option)
            return cli_usage_error(command, "--shard auto: JOB_COMPLETION_INDEX %u is not below "
                                            "--shard-count %u", id, b->shard_count_option);
        b->shard_index = id;
        b->shard_count = b->shard_count_option;
        return -1;
    }
    return cli_usage_error(command, "--shard auto: neither SLURM_ARRAY_TASK_ID nor "
                                    "JOB_COMPLETION_INDEX is set");
}
