/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * device_gate.h: one queue for the GPU. HTTP threads, jobs and auto-equalization workers all
 * compute; on the CPU they run side by side, but work that may run on the GPU passes through
 * one gate, so the device serves one request at a time instead of every HTTP thread launching
 * kernels and allocating device memory at once.
 */
#ifndef DH_ORTHANC_DEVICE_GATE_H
#define DH_ORTHANC_DEVICE_GATE_H

#include "dicomhist.h"

/* The device the plugin computes on by default ("Device" in the configuration). */
void dho_gate_set_default(dh_device device);
dh_device dho_gate_default(void);

/* Enters the gate when `device` may use the GPU (auto with a usable GPU, or cuda); returns the
 * token to give to dho_gate_leave. */
int dho_gate_enter(dh_device device);
void dho_gate_leave(int token);

/* "cpu", or the name of the GPU when work runs there by default ("cuda" when CUDA gives none). */
const char *dho_gate_device_name(void);
/* Requests waiting for or holding the gate. */
unsigned dho_gate_waiting(void);

#endif /* DH_ORTHANC_DEVICE_GATE_H */
