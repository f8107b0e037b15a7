/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * device_gate.c: the GPU's one queue (device_gate.h): a mutex, fair enough for a handful of
 * waiters, and a count of them for /dicomhist/status.
 */
#include "device_gate.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint waiting;
static dh_device default_device = DH_DEVICE_AUTO;

void dho_gate_set_default(dh_device device) { default_device = device; }
dh_device dho_gate_default(void) { return default_device; }

int dho_gate_enter(dh_device device)
{
    if (device == DH_DEVICE_CPU || (device == DH_DEVICE_AUTO && !dh_cuda_available()))
        return 0;
    atomic_fetch_add(&waiting, 1);
    pthread_mutex_lock(&gate);
    return 1;
}

void dho_gate_leave(int token)
{
    if (!token)
        return;
    pthread_mutex_unlock(&gate);
    atomic_fetch_sub(&waiting, 1);
}

static char gpu_name[256];

static void read_name(void) { dh_cuda_device_name(gpu_name, sizeof gpu_name); }

const char *dho_gate_device_name(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* the GPU does not change while we run */
    if (default_device == DH_DEVICE_CPU || !dh_cuda_available())
        return "cpu";
    pthread_once(&once, read_name);
    return gpu_name[0] ? gpu_name : "cuda";
}

unsigned dho_gate_waiting(void) { return atomic_load(&waiting); }
