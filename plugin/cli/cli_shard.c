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

/* An environment variable as a whole number; returns 0, or -1 when absent or not a number. */
static int env_u32(const char *name, uint32_t *out)
{
    const char *v = getenv(name);
    return v && text_parse_u32(v, 0, 100000000, out) == 0 ? 0 : -1;
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
    uint32_t id, min = 0, max = 0, count = 0, step = 1;
    if (env_u32("SLURM_ARRAY_TASK_ID", &id) == 0) {
        const int has_min = env_u32("SLURM_ARRAY_TASK_MIN", &min) == 0;
        const int has_max = env_u32("SLURM_ARRAY_TASK_MAX", &max) == 0 && has_min && max >= min;
        const int has_count = env_u32("SLURM_ARRAY_TASK_COUNT", &count) == 0;
        if (!has_min)
            min = 0;
        /* ID - MIN is the index only in a contiguous range: with steps or a list (0-30:2, 1,4,9)
         * some indices would never run, silently. */
        if ((env_u32("SLURM_ARRAY_TASK_STEP", &step) == 0 && step != 1) ||
            (has_max && has_count && count != max - min + 1))
            return cli_usage_error(command,
                                   "--shard auto: the Slurm array %u-%u holds %u task(s), not a "
                                   "contiguous range (an array with steps or a list needs "
                                   "--shard I/N)", min, max, count);
        if (!has_count && has_max)
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
    if (env_u32("JOB_COMPLETION_INDEX", &id) == 0) {
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
