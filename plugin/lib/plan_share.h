// SPDX-License-Identifier: MIT
/*
 * plan_share.h: the library's side of dh_plan_share (dicomhist.h): the files of one series
 * claimed from both ends, the owner's from the front, its helpers' from the back.
 */
#ifndef DH_PLUGIN_PLAN_SHARE_H
#define DH_PLUGIN_PLAN_SHARE_H

#include <stddef.h>

#include "dh_dicom.h"
#include "dicomhist.h"

/* Decodes slot `slot` of `job` with the reader's options (a helper's are its own context's). */
typedef void (*dh_share_decode_fn)(void *job, size_t slot, const dh_dicom_read_options *options);

/* The owner's loop: opens share for `count` slots of job, decodes from the front on `threads`
 * threads with `options` until every slot is claimed, waits for the helpers' slots in flight,
 * closes the share. Returns once every slot is decoded, whoever decoded it. */
void dh_plan_share_run(dh_plan_share *share, size_t count, int threads, dh_share_decode_fn decode,
                       void *job, const dh_dicom_read_options *options);

#endif /* DH_PLUGIN_PLAN_SHARE_H */
