// SPDX-License-Identifier: MIT
/*
 * cli_inputs.c: the PATH operands as volumes, failures reported the one way every command
 * reports them (`dicomhist: FILE: reason`).
 */
#include "cli_commands.h"

#include <string.h>

void cli_report_failure(const char *what, const char *message) {
    cli_report_failure_to(stderr, what, message);
}

void cli_report_failure_to(FILE *to, const char *what, const char *message) {
    size_t len = strlen(what);
    if (!message || !*message)
        message = "failed";
    /* Library messages name the file themselves; say it once. */
    if (len > 0 && strncmp(message, what, len) == 0 && message[len] == ':' &&
        message[len + 1] == ' ')
        message += len + 2;
    fprintf(to, "dicomhist: %s: %s\n", what, message);
}

int cli_report_no_cuda(void) {
    fprintf(stderr, "dicomhist: --device cuda: no usable CUDA GPU (this build has no CUDA "
                    "support, or no GPU is present)\n");
    return CLI_EXIT_INPUT;
}

int cli_open_context(dh_device device, dh_ctx **ctx) {
    *ctx = NULL;
    if (device == DH_DEVICE_CUDA && !dh_cuda_available())
        return cli_report_no_cuda();
    *ctx = dh_ctx_create();
    if (!*ctx) {
        fprintf(stderr, "dicomhist: out of memory\n");
        return CLI_EXIT_INPUT;
    }
    return -1;
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

void cli_batch_help(FILE *out, int writes) {
    fprintf(out,
            "  -j, --jobs N           worker threads (default: one per core); each reads and\n"
            "                         processes a series at a time, and the slices of a\n"
            "                         large series decode in parallel; results are the same\n"
            "                         and come in the same order whatever N\n"
            "  --modality LIST        only series of these modalities (CR,DX,CT, ...)\n"
            "  --shard I/N            the I-th of N disjoint parts (0-based), split by series\n"
            "  --shard auto           I and N from SLURM_ARRAY_TASK_ID/_MIN/_MAX/_COUNT, or\n"
            "                         from JOB_COMPLETION_INDEX with --shard-count N\n"
            "  --shard-count N        the number of shards under --shard auto\n"
            "  --progress             progress on stderr even when it is not a terminal\n"
            "  --decode cpu|auto      auto (the default): JPEG 2000 and HTJ2K decode on the GPU\n"
            "                         where NVIDIA's nvJPEG2000 loads and a GPU answers, else\n"
            "                         on the CPU (info --json's decoder says which; a series\n"
            "                         goes to a free core instead where that is sooner); cpu:\n"
            "                         the CPU decoders only (docs/batch.md)\n"
            "  --stats                after the summary, the workers' time split into read,\n"
            "                         decode, compute and write (wall and CPU seconds,\n"
            "                         docs/batch.md); each file is then read whole before\n"
            "                         it is decoded\n");
    if (writes)
        fprintf(out,
                "  --force                replace outputs that exist (never replaced otherwise)\n"
                "  --dry-run              scan and plan, write OUTDIR/dicomhist-manifest.jsonl\n"
                "                         of what would be done, touch nothing else\n"
                "Each worker's outputs are written by a thread of its own while the worker\n"
                "reads its next series: up to two series in memory per worker\n"
                "(DICOMHIST_BATCH_WRITERS=0: one, each written before the next is read).\n");
}
