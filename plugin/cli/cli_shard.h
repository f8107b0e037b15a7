// SPDX-License-Identifier: MIT
/*
 * cli_shard.h: --shard I/N and --shard auto. A shard takes the series whose identity hashes to
 * I modulo N, so a series is never divided and the split depends only on the inputs. auto reads
 * I and N from a Slurm array job (SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN, and
 * SLURM_ARRAY_TASK_COUNT, or MAX - MIN + 1) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX,
 * with N from --shard-count, which also overrides Slurm's count).
 */
#ifndef DH_CLI_SHARD_H
#define DH_CLI_SHARD_H

#include <stdint.h>

#include "cli_args.h"

/* Settles b->shard_index and b->shard_count for --shard auto from the environment; returns -1 to
 * go on, or 2 after a usage error naming what is missing. */
int cli_shard_resolve(const char *command, cli_batch_options *b);

/* The shard (0..count-1) of an identity: a series' UID, or a file's output name. */
uint32_t cli_shard_of(const char *identity, uint32_t count);

#endif /* DH_CLI_SHARD_H */
