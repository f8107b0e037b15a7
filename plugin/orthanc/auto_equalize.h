/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * auto_equalize.h: new CR/DX series equalized as they arrive, configured in Orthanc's
 * configuration file:
 *   "DicomHist": {"AutoEqualize": {"Enable": true, "Modalities": ["CR", "DX"],
 *                 "Window": "percentile:1", "ClipLimit": 3, "Mode": "volume", "Bits": 12},
 *                 "Device": "auto", "Threads": 2}
 *
 * Driven by Orthanc's change log, not by the change callback: one dispatcher thread reads
 * /changes from the last sequence number it persisted (a global property), hands each
 * StableSeries to a bounded queue, and `Threads` workers equalize one series at a time each
 * (derive.h: the derived series stored in the same study, UIDs computed from the source's, so a
 * repeat is AlreadyStored). The change callback only wakes the dispatcher. After a restart the
 * dispatcher catches up from the persisted sequence, and series that were still waiting to
 * become stable when Orthanc stopped (Orthanc keeps that state in memory only) are taken from
 * their NewSeries. Series whose first instance carries dicomhist's DerivationDescription are
 * its own outputs and are left alone. Threads start on OrthancStarted and are joined on
 * OrthancStopped; work in progress stops between two steps, and what was not finished is
 * done again after the next start.
 */
#ifndef DH_ORTHANC_AUTO_EQUALIZE_H
#define DH_ORTHANC_AUTO_EQUALIZE_H

#include <jansson.h>

/* The global property holding the last change sequence number handled (>= 1024: plugins'). */
#define DHO_PROPERTY_LAST_CHANGE 19650

/* Reads the "DicomHist" section (NULL: absent, auto-equalization off). Returns 0, or -1 after
 * logging what is wrong. */
int dho_auto_configure(const json_t *section);
void dho_auto_start(void);
/* Stops and joins the threads; safe to call twice. */
void dho_auto_stop(void);
/* A StableSeries arrived: wakes the dispatcher (never blocks, never calls Orthanc). */
void dho_auto_notify(const char *series_id);

#endif /* DH_ORTHANC_AUTO_EQUALIZE_H */
