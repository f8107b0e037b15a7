// SPDX-License-Identifier: MIT
/*
 * cli_manifest.h: OUTDIR/dicomhist-manifest.jsonl (or -I-of-N.jsonl for a shard): one JSON line
 * per input file as its work completes (path, status done / failed / skipped / planned, error or
 * reason, series_uid, outputs, seconds, size, mtime_ns), appended and never rewritten. Opening
 * it reads the lines of earlier runs, so a run can skip what is done already (resume).
 */
#ifndef DH_CLI_MANIFEST_H
#define DH_CLI_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_manifest cli_manifest;

/* The last line an earlier run wrote for one input file. */
typedef struct cli_manifest_record {
    char *path, *status, *reason, *work;
    uint64_t size;
    int64_t mtime_ns;
    char **outputs;
    size_t output_count;
} cli_manifest_record;

/* Opens (creating OUTDIR and the file when missing) the manifest `name` in outdir and reads the
 * lines already there; a line cut short by a killed run is ignored. With dry_run the file is
 * only read when it exists and lines go to it all the same (a dry run writes only the manifest).
 * Returns 0, or -1 with errno set. */
int cli_manifest_open(const char *outdir, const char *name, cli_manifest **out);
void cli_manifest_close(cli_manifest *m);
/* The manifest's path, for messages. */
const char *cli_manifest_path(const cli_manifest *m);
/* The last record for path, or NULL. */
const cli_manifest_record *cli_manifest_find(const cli_manifest *m, const char *path);
/* 1 when the record says done by the same work, the input still has that size and time, and
 * its outputs exist. */
int cli_manifest_record_done(const cli_manifest_record *r, const char *work, uint64_t size,
                             int64_t mtime_ns);
/* Appends complete lines (each ending in a newline) in one write; returns 0, or -1 with errno. */
int cli_manifest_append(cli_manifest *m, const char *lines, size_t len);

#endif /* DH_CLI_MANIFEST_H */
