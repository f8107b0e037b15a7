/*
 * cli_inputs.c: the PATH operands as volumes, failures reported the one way every command
 * reports them (`dicomhist: FILE: reason`), and the body the per-volume commands share.
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

int cli_open_context(dh_device device, dh_ctx **ctx) {
    *ctx = NULL;
    if (device == DH_DEVICE_CUDA && !dh_cuda_available()) {
        fprintf(stderr, "dicomhist: --device cuda: no usable CUDA GPU (this build has no CUDA "
                        "support, or no GPU is present)\n");
        return CLI_EXIT_INPUT;
    }
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

int cli_run_on_volumes(const cli_command_line *cl, cli_volumes_fn work, void *state) {
    dh_ctx *ctx = NULL;
    int status = cli_open_context(cl->device, &ctx);
    if (status >= 0)
        return status;
    int failed = 0;
    dh_volume_set *set = cli_load_inputs(ctx, cl->paths, cl->path_count, &failed);
    status = CLI_EXIT_OK;
    if (set) {
        report_json json;
        report_json_init(&json, cli_stdout_sink());
        status = work(state, cl, ctx, set, cli_stdout_sink(), &json);
    }
    if (cli_stdout_finish() != 0 && status == CLI_EXIT_OK)
        status = CLI_EXIT_INPUT;
    if (failed && status == CLI_EXIT_OK)
        status = CLI_EXIT_INPUT;
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    return status;
}
