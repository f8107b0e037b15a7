/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * derive.h: one equalize or window of an Orthanc series into a derived series, or into one
 * Grayscale Softcopy Presentation State, stored in the same study, in small steps so that a job
 * can report progress and stop between them, and a worker can give up promptly at shutdown:
 * fetch one instance's bytes per step (into memory: nothing touches the disk), then compute and
 * encode the derived files into buffers, then store one file per step.
 *
 * The derived UIDs are computed, not drawn: 2.25.<MD5 as a decimal> of the parameters' key
 * (options.h) and the source's SeriesInstanceUID or SOPInstanceUID. The same series derived
 * with the same parameters gives the same UIDs, so a repeat is "AlreadyStored" in Orthanc, and
 * a series that grew since it was derived gets its derived series replaced, never a second one.
 * A presentation state's SOPInstanceUID also hashes every referenced SOPInstanceUID, so a
 * series that grew gets a new state, which replaces the old one's series.
 * The derived files carry dicomhist's DerivationDescription ("dicomhist <version> ..."), the
 * marker auto-equalization reads to leave its own outputs alone.
 */
#ifndef DH_ORTHANC_DERIVE_H
#define DH_ORTHANC_DERIVE_H

#include <jansson.h>
#include <stddef.h>

#include "dicomhist.h"
#include "series_fetch.h"

typedef enum dho_derive_phase {
    DHO_DERIVE_FETCH,
    DHO_DERIVE_COMPUTE,
    DHO_DERIVE_STORE,
    DHO_DERIVE_DONE,
    DHO_DERIVE_FAILED
} dho_derive_phase;

typedef struct dho_derive {
    dh_equalize_params params;
    int gsps; /* a presentation state instead of a derived series */
    char key[512];
    dho_derive_phase phase;
    dho_series series;
    dh_ctx *ctx;
    dh_equalized *result;
    dh_derived_series *written;
    size_t stored;        /* derived files handed to Orthanc */
    size_t already;       /* of which Orthanc already had */
    json_t *instances;    /* their Orthanc IDs */
    char derived_id[72];  /* the derived series' Orthanc ID */
    /* Two derives of one series with the same parameters (a REST request and an auto-equalize
     * worker, two requests) write the same derived series: each claims (source, key) before it
     * fetches and keeps the claim to the end, so they run one after the other, the later one
     * listing the series afresh, and an older listing never replaces a newer result. */
    char claim_key[65];
    int claimed, relist;
    double claim_wait_since; /* CLOCK_MONOTONIC seconds of the first busy try, 0 before */
    struct dho_derive *next_claim;
    /* The failure, when phase is DHO_DERIVE_FAILED. */
    int http;
    char error[40];  /* "DH_ERR_MALFORMED", "UnknownResource", ... */
    char kind[16];   /* "Series" or "Instance" */
    char id[72];
    char reason[2048];
} dho_derive;

/* The phrase every derived file's DerivationDescription starts with. */
#define DHO_DERIVED_MARKER "dicomhist "

/* Lists the series and prepares the first step; gsps: the result is one presentation state
 * (dh_equalized_encode_gsps) rather than a derived series. later: the first step may come long
 * after (a queued job), so the series is listed again then. Returns 0, or -1 with the failure
 * in d (an unknown series is a 404 at once). dho_derive_free is needed either way. */
int dho_derive_open(dho_derive *d, const char *series_id, const dh_equalize_params *params,
                    int gsps, const char *key, int later);
/* Runs one step; returns 1 while steps remain, 0 when done, -1 on failure (in d). */
int dho_derive_step(dho_derive *d);
/* 0..1. */
float dho_derive_progress(const dho_derive *d);
/* {"ID", "Path", "Instances", "AlreadyStored"} once done; {"HttpStatus", "Error", kind: id,
 * "Reason"} once failed. A new reference. */
json_t *dho_derive_answer(const dho_derive *d);
/* For a derive that will take no further step, such as a cancelled job: removes a derived
 * series it left partly stored (as a failure while storing does), the instances' bytes and its
 * claim, and leaves it failed ("Cancelled", 409). Nothing for one done or failed already. */
void dho_derive_abandon(dho_derive *d);
/* Marks d failed and gives up its claim, asking Orthanc for no work (its buffers are freed):
 * for a step left by an exception thrown inside Orthanc (routes_derive.c). */
void dho_derive_lost(dho_derive *d);
void dho_derive_free(dho_derive *d);

#endif /* DH_ORTHANC_DERIVE_H */
