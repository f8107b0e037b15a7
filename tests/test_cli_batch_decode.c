// SPDX-License-Identifier: MIT
/*
 * test_cli_batch_decode.c: the batch's choice of decoder per series (plugin/cli/cli_batch_decode.h)
 * without a GPU: the rule against the arithmetic it states (the CPU takes a series when one core,
 * at bytes / cpu_rate, is done no later than the GPU draining everything left at gpu_rate), the
 * syntaxes and slots, and the scheduler's bookkeeping over a batch whose decoders are marked
 * ready; plus the real loader where no GPU decoder is usable (every series then goes to the
 * library's own fallback, which names why).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_batch_decode.h"
#include "dicomhist.h"
#include "test_support.h"

static cli_decode_view view(int loading, int ready, uint32_t busy, uint32_t slots,
                            uint64_t bytes, uint64_t after)
{
    return (cli_decode_view){.loading = loading, .ready = ready, .busy = busy, .slots = slots,
                             .bytes = bytes, .after = after};
}

static double monotonic_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

START_TEST(unusable_decoders_leave_it_to_the_library)
{
    cli_decode_view v = view(0, 0, 0, 4, 100, 1000000);
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_GPU);
}
END_TEST

START_TEST(a_free_slot_takes_the_series)
{
    for (uint32_t busy = 0; busy < 4; busy++) {
        cli_decode_view v = view(0, 1, busy, 4, 100, 0);
        ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_GPU);
    }
}
END_TEST

START_TEST(while_loading_the_first_slots_take_the_gpu)
{
    /* However long the queue: the GPU's feeders take their slots at once (their first frame
     * waits for the decoders, their load threads decode meanwhile). */
    for (uint32_t busy = 0; busy < 4; busy++) {
        cli_decode_view v = view(1, 0, busy, 4, 100, 1u << 30);
        ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_GPU);
    }
    cli_decode_view v = view(1, 0, 4, 4, 100, 1u << 30); /* feeders enough: a long queue goes */
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_CPU); /* to the CPU */
    v = view(1, 0, 4, 4, 100, 100); /* a short one waits */
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_WAIT);
}
END_TEST

/* The boundary of the prior: CPU exactly when after + bytes >= ratio * bytes. */
START_TEST(busy_slots_follow_the_prior_ratio)
{
    const uint64_t bytes = 1000;
    const uint64_t edge = (uint64_t)(CLI_DECODE_PRIOR_RATIO * bytes) - bytes;
    cli_decode_view v = view(0, 1, 4, 4, bytes, edge);
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_CPU);
    v.after = edge - 1;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_WAIT);
    /* One rate measured is not a ratio: the prior still holds. */
    v.cpu_rate = 1e9;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_WAIT);
}
END_TEST

/* Measured rates replace the prior, in seconds: 10 MB on a 10 MB/s core takes 1 s; a 50 MB/s GPU
 * drains after + 10 MB in (after + 10 MB) / 50 MB/s, so the CPU from after = 40 MB on. */
START_TEST(measured_rates_decide_in_seconds)
{
    const uint64_t mb = 1000000;
    cli_decode_view v = view(0, 1, 2, 2, 10 * mb, 40 * mb);
    v.cpu_rate = 10.0 * mb;
    v.gpu_rate = 50.0 * mb;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_CPU);
    v.after = 40 * mb - 1;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_WAIT);
    v.gpu_rate = 5.0 * mb; /* a GPU slower than a core: the CPU whatever is left */
    v.after = 0;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_CPU);
}
END_TEST

/* While the decoders load: a series a core finishes before they are expected is the CPU's, from
 * the measured rate or else the syntax's prior; a longer one takes a slot as a feeder. */
START_TEST(while_loading_short_series_go_to_the_cpu)
{
    cli_decode_view v = view(1, 0, 0, 16, 21000000, 0);
    v.cpu_prior = 70e6; /* 0.3 s on a core */
    v.load_left = 0.31;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_CPU);
    v.load_left = 0.29;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_GPU);
    v.cpu_rate = 100e6; /* measured: 0.21 s */
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_CPU);
    v.cpu_rate = v.cpu_prior = 0; /* no rate at all: the feeders' rule */
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_GPU);
    /* Loaded: no load left, a free slot takes it. */
    v = view(0, 1, 0, 16, 21000000, 0);
    v.cpu_prior = 70e6;
    ck_assert_int_eq(cli_decode_choose(&v), CLI_DECODE_GPU);
}
END_TEST

START_TEST(cpu_priors_per_syntax)
{
    ck_assert(cli_decode_cpu_prior("1.2.840.10008.1.2.4.90") == 10.6e6);
    ck_assert(cli_decode_cpu_prior("1.2.840.10008.1.2.4.91") == 10.6e6);
    ck_assert(cli_decode_cpu_prior("1.2.840.10008.1.2.4.201") == 74e6);
    ck_assert(cli_decode_cpu_prior("1.2.840.10008.1.2.4.203") == 74e6);
    ck_assert(cli_decode_cpu_prior("1.2.840.10008.1.2.4.20") == 0);
    ck_assert(cli_decode_cpu_prior("1.2.840.10008.1.2.4.2011") == 0);
    ck_assert(cli_decode_cpu_prior("1.2.840.10008.1.2.4.70") == 0);
    ck_assert(cli_decode_cpu_prior(NULL) == 0);
}
END_TEST

START_TEST(gpu_priors_per_syntax)
{
    ck_assert(cli_decode_gpu_prior("1.2.840.10008.1.2.4.90") == 250e6);
    ck_assert(cli_decode_gpu_prior("1.2.840.10008.1.2.4.91") == 250e6);
    ck_assert(cli_decode_gpu_prior("1.2.840.10008.1.2.4.201") == 0.56e9);
    ck_assert(cli_decode_gpu_prior("1.2.840.10008.1.2.4.202") == 0.56e9);
    ck_assert(cli_decode_gpu_prior("1.2.840.10008.1.2.4.203") == 0.56e9);
    ck_assert(cli_decode_gpu_prior("1.2.840.10008.1.2.4.70") == 0);
    ck_assert(cli_decode_gpu_prior("1.2.840.10008.1.2.1") == 0);
    ck_assert(cli_decode_gpu_prior(NULL) == 0);
}
END_TEST

/* --device auto's rule for the decoders, by the priors, on 16 workers: J2K from about 0.22 GB,
 * HTJ2K from about 2.2 GB (session 22: J2K 0.14 GB and HTJ2K 0.55 and 1.09 GB faster on the cores
 * alone, J2K 0.27 GB and HTJ2K 4.36 GB faster with the GPU, HTJ2K 2.18 GB even); fewer workers
 * want the GPU sooner. */
static int auto_loads_bytes(const char *uid, double bytes, uint32_t jobs, double estimate[2])
{
    return cli_decode_auto_loads(bytes / cli_decode_cpu_prior(uid),
                                 bytes / cli_decode_gpu_prior(uid), jobs, estimate);
}

START_TEST(auto_loads_the_decoders_where_they_shorten_the_batch)
{
    unsetenv("DICOMHIST_AUTO_DECODERS");
    const char *j2k = "1.2.840.10008.1.2.4.90", *ht = "1.2.840.10008.1.2.4.201";
    double e[2] = {-1, -1};
    ck_assert(!auto_loads_bytes(j2k, 0.2e9, 16, e));
    ck_assert(e[0] < e[1]);
    ck_assert(auto_loads_bytes(j2k, 0.23e9, 16, e));
    ck_assert(e[0] > e[1]);
    ck_assert(auto_loads_bytes(j2k, 1.09e9, 16, NULL));
    ck_assert(!auto_loads_bytes(j2k, 21e6, 16, NULL)); /* one 40-slice series */
    ck_assert(!auto_loads_bytes(ht, 0.55e9, 16, NULL));
    ck_assert(!auto_loads_bytes(ht, 1.09e9, 16, e));
    /* The cores alone: 1.09 GB / (16 x 74 MB/s); with the GPU: load, fixed cost, then the
     * rest on 16 cores plus the GPU's 0.56 GB/s / 74 MB/s cores. */
    ck_assert(fabs(e[0] - 1.09e9 / (16 * 74e6)) < 1e-9);
    double core = 1.09e9 / 74e6;
    double with = 0.6 + CLI_DECODE_AUTO_FIXED_SECONDS + (core - 16 * 0.6) / (16 + 0.56e9 / 74e6);
    ck_assert(fabs(e[1] - with) < 1e-9);
    ck_assert(!auto_loads_bytes(ht, 2.1e9, 16, NULL));
    ck_assert(auto_loads_bytes(ht, 2.3e9, 16, NULL));
    ck_assert(auto_loads_bytes(ht, 4.36e9, 16, NULL));
    ck_assert(auto_loads_bytes(ht, 1.09e9, 4, NULL)); /* four workers: the GPU */
    /* Less than the cores decode during the load: no GPU term at all. */
    ck_assert(!cli_decode_auto_loads(1.0, 0.01, 16, e));
    ck_assert(fabs(e[1] - (0.6 + CLI_DECODE_AUTO_FIXED_SECONDS)) < 1e-12);
    /* Nothing to weigh: loaded, as before the rule. */
    ck_assert(cli_decode_auto_loads(100.0, 0, 16, NULL));
    ck_assert(cli_decode_auto_loads(100.0, 1.0, 0, NULL));
    /* The measuring knob decides instead; any other value leaves the rule. */
    setenv("DICOMHIST_AUTO_DECODERS", "gpu", 1);
    ck_assert(auto_loads_bytes(j2k, 21e6, 16, NULL));
    setenv("DICOMHIST_AUTO_DECODERS", "cpu", 1);
    ck_assert(!auto_loads_bytes(j2k, 1.09e9, 16, e)); /* the estimate still made, for --stats */
    ck_assert(e[0] > e[1] && e[1] > 1.0);
    ck_assert(!cli_decode_auto_loads(100.0, 0, 16, e)); /* no prior: the knob still decides */
    ck_assert(e[0] == 0 && e[1] == 0);
    setenv("DICOMHIST_AUTO_DECODERS", "GPU", 1);
    ck_assert(!auto_loads_bytes(j2k, 21e6, 16, NULL));
    unsetenv("DICOMHIST_AUTO_DECODERS");
}
END_TEST

START_TEST(syntaxes_the_gpu_reads)
{
    unsetenv("DH_GPU_JPEG_LOSSLESS");
    const char *yes[] = {"1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.91",
                         "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202",
                         "1.2.840.10008.1.2.4.203"};
    const char *no[] = {"1.2.840.10008.1.2.4.70", "1.2.840.10008.1.2.1",
                        "1.2.840.10008.1.2.4.80", "1.2.840.10008.1.2.5",
                        "1.2.840.10008.1.2.4.9",  "",
                        "1.2.840.10008.1.2.4.900"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        ck_assert_msg(cli_decode_gpu_syntax(yes[i]), "%s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        ck_assert_msg(!cli_decode_gpu_syntax(no[i]), "%s", no[i]);
    ck_assert(!cli_decode_gpu_syntax(NULL));
    setenv("DH_GPU_JPEG_LOSSLESS", "1", 1);
    ck_assert(cli_decode_gpu_syntax("1.2.840.10008.1.2.4.70"));
    setenv("DH_GPU_JPEG_LOSSLESS", "0", 1);
    ck_assert(!cli_decode_gpu_syntax("1.2.840.10008.1.2.4.70"));
    ck_assert(cli_decode_gpu_refused("1.2.840.10008.1.2.4.70"));
    ck_assert(!cli_decode_gpu_refused("1.2.840.10008.1.2.4.90"));
    ck_assert(!cli_decode_gpu_refused("1.2.840.10008.1.2.1"));
    ck_assert(!cli_decode_gpu_refused(NULL));
    setenv("DH_GPU_JPEG_LOSSLESS", "1", 1); /* asked for: scheduled like JPEG 2000 instead */
    ck_assert(!cli_decode_gpu_refused("1.2.840.10008.1.2.4.70"));
    unsetenv("DH_GPU_JPEG_LOSSLESS");
}
END_TEST

START_TEST(slots_per_syntax)
{
    unsetenv("DICOMHIST_GPU_DECODE_SLOTS");
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.90", 16), 10);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.91", 2), 2);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.91", 5), 5);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.201", 16), 16);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.90", 1), 1);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.70", 16), 4); /* SV1 to device */
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.70", 3), 3);
    setenv("DICOMHIST_GPU_DECODE_SLOTS", "8", 1);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.90", 16), 8);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.201", 4), 4);
    setenv("DICOMHIST_GPU_DECODE_SLOTS", "x", 1); /* not a number: the defaults */
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.90", 16), 10);
    setenv("DICOMHIST_GPU_DECODE_SLOTS", "0", 1);
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.201", 16), 16);
    setenv("DICOMHIST_GPU_DECODE_SLOTS", "-1", 1); /* negative: the defaults too */
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.90", 16), 10);
    setenv("DICOMHIST_GPU_DECODE_SLOTS", "99999", 1); /* more than the workers: all of them */
    ck_assert_uint_eq(cli_decode_slots("1.2.840.10008.1.2.4.90", 16), 16);
    unsetenv("DICOMHIST_GPU_DECODE_SLOTS");
}
END_TEST

/* The bookkeeping over ready decoders: two slots, a long queue, then a short one. */
START_TEST(scheduler_shares_the_work)
{
    cli_gpu_decode g;
    ck_assert_int_eq(cli_gpu_decode_start(&g, 0, 0), 0); /* nothing pending: no loader */
    ck_assert(!g.started);
    ck_assert(cli_gpu_decode_loaded(&g));
    g.ready = 1; /* as the loader leaves usable decoders */
    g.pending = 100 * 1000;
    const char *note = NULL;
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_GPU);
    ck_assert_str_eq(note, "");
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_GPU);
    ck_assert_uint_eq(g.busy, 2);
    /* 97 000 bytes left after it: well over 24 series' worth, so a core takes it. */
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_CPU);
    ck_assert_ptr_nonnull(strstr(note, "beside the GPU"));
    ck_assert_uint_eq(g.pending, 97 * 1000);
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, NULL, 2, 1000, 0.5);
    cli_gpu_decode_done(&g, CLI_DECODE_CPU, NULL, 2, 1000, 2.0);
    ck_assert_uint_eq(g.busy, 1);
    ck_assert_uint_eq(g.gpu_series, 1);
    ck_assert_uint_eq(g.cpu_series, 1);
    /* A slot is free again. */
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_GPU);
    /* Both busy, measured: the GPU 1000 B in 0.5 s a series x 2 slots = 4000 B/s, a core
     * 1000 B in 2 s = 500 B/s: ratio 8. With 7000 bytes after this 1000-byte series the core
     * (2 s) is done when the GPU would be (8000 B at 4000 B/s): the CPU takes it. */
    g.pending = 8000;
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_CPU);
    ck_assert_uint_eq(g.pending, 7000);
    cli_gpu_decode_stop(&g);
}
END_TEST

/* Where auto computes beside the GPU's decoding: HTJ2K, not classic JPEG 2000 nor SV1; the
 * measuring knob decides instead for every syntax the GPU decoders read, and for no other. */
START_TEST(auto_computes_beside_htj2k_decoding)
{
    unsetenv("DICOMHIST_AUTO_COMPUTE_BESIDE");
    unsetenv("DH_GPU_JPEG_LOSSLESS");
    ck_assert(cli_decode_compute_beside("1.2.840.10008.1.2.4.201"));
    ck_assert(cli_decode_compute_beside("1.2.840.10008.1.2.4.203"));
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.4.90"));
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.4.91"));
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.4.70"));
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.1"));
    ck_assert(!cli_decode_compute_beside(NULL));
    setenv("DH_GPU_JPEG_LOSSLESS", "1", 1); /* SV1 on the GPU decoders: still the cores */
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.4.70"));
    unsetenv("DH_GPU_JPEG_LOSSLESS");
    setenv("DICOMHIST_AUTO_COMPUTE_BESIDE", "1", 1);
    ck_assert(cli_decode_compute_beside("1.2.840.10008.1.2.4.90"));
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.1"));
    setenv("DICOMHIST_AUTO_COMPUTE_BESIDE", "0", 1);
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.4.201"));
    setenv("DICOMHIST_AUTO_COMPUTE_BESIDE", "yes", 1); /* not 0 or 1: the rule */
    ck_assert(cli_decode_compute_beside("1.2.840.10008.1.2.4.201"));
    ck_assert(!cli_decode_compute_beside("1.2.840.10008.1.2.4.90"));
    unsetenv("DICOMHIST_AUTO_COMPUTE_BESIDE");
}
END_TEST

/* --device cuda reads a GPU series into GPU memory through its share unless told otherwise. */
START_TEST(device_series_by_default_through_the_share)
{
    unsetenv("DICOMHIST_DEVICE_SERIES");
    ck_assert_int_eq(cli_decode_device_series(), CLI_DEVICE_SERIES_SHARED);
    setenv("DICOMHIST_DEVICE_SERIES", "0", 1);
    ck_assert_int_eq(cli_decode_device_series(), CLI_DEVICE_SERIES_NONE);
    setenv("DICOMHIST_DEVICE_SERIES", "whole", 1);
    ck_assert_int_eq(cli_decode_device_series(), CLI_DEVICE_SERIES_WHOLE);
    setenv("DICOMHIST_DEVICE_SERIES", "1", 1); /* neither word: the default */
    ck_assert_int_eq(cli_decode_device_series(), CLI_DEVICE_SERIES_SHARED);
    unsetenv("DICOMHIST_DEVICE_SERIES");
    /* The wait for the decoders' load, asked for by "1" only. */
    unsetenv("DICOMHIST_GPU_DECODE_WAIT");
    ck_assert(!cli_decode_wait_for_load());
    setenv("DICOMHIST_GPU_DECODE_WAIT", "1", 1);
    ck_assert(cli_decode_wait_for_load());
    setenv("DICOMHIST_GPU_DECODE_WAIT", "yes", 1);
    ck_assert(!cli_decode_wait_for_load());
    unsetenv("DICOMHIST_GPU_DECODE_WAIT");
}
END_TEST

/* Feeders taken while the decoders load hold slots like any, and their time, which holds the
 * load, is not taken for the GPU's rate; a series begun once they are loaded is. */
START_TEST(feeders_taken_while_loading)
{
    cli_gpu_decode g;
    ck_assert_int_eq(cli_gpu_decode_start(&g, 0, 0), 0);
    g.loading = 1; /* as the loader leaves it while it runs */
    g.load_start = monotonic_now();
    g.pending = 100 * 1000;
    const char *note = NULL;
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_GPU);
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_GPU);
    ck_assert_uint_eq(g.busy, 2);
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_CPU);
    ck_assert_ptr_nonnull(strstr(note, "while the GPU decoders loaded"));
    g.loading = 0, g.ready = 1, g.load_end = monotonic_now(); /* loaded */
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, NULL, 2, 1000, 0.5); /* begun 0.5 s ago */
    ck_assert_uint_eq(g.busy, 1);
    ck_assert_uint_eq(g.gpu_series, 1);
    ck_assert(g.gpu_seconds == 0 && g.gpu_bytes == 0);
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, NULL, NULL, &note), CLI_DECODE_GPU);
    ck_assert_uint_eq(g.busy, 2);
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, NULL, 2, 1000, 0.0); /* begun after the load */
    ck_assert(g.gpu_bytes == 1000);
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, NULL, 2, 1000, 1.0);
    ck_assert_uint_eq(g.busy, 0);
    ck_assert_uint_eq(g.gpu_series, 3);
    ck_assert(g.gpu_bytes == 1000);
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, NULL, 2, 1000, 1.0); /* never below zero */
    ck_assert_uint_eq(g.busy, 0);
    cli_gpu_decode_stop(&g);
}
END_TEST

/* One load thread per feeder by default; DICOMHIST_LOAD_THREADS 0-64 overrides it. */
START_TEST(load_threads_by_default_and_asked)
{
    unsetenv("DICOMHIST_LOAD_THREADS");
    ck_assert_int_eq(cli_decode_load_threads(), 1);
    setenv("DICOMHIST_LOAD_THREADS", "0", 1);
    ck_assert_int_eq(cli_decode_load_threads(), 0);
    setenv("DICOMHIST_LOAD_THREADS", "3", 1);
    ck_assert_int_eq(cli_decode_load_threads(), 3);
    const char *bad[] = {"-1", "65", "x", "2x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("DICOMHIST_LOAD_THREADS", bad[i], 1);
        ck_assert_msg(cli_decode_load_threads() == 1, "'%s'", bad[i]);
    }
    unsetenv("DICOMHIST_LOAD_THREADS");
}
END_TEST

/* Back threads beside the GPU's feeder: none by default (session 21 measured the run faster
 * without them); DICOMHIST_BACK_THREADS asks for some, for classic JPEG 2000 only. */
START_TEST(back_threads_for_classic_j2k)
{
    unsetenv("DICOMHIST_BACK_THREADS");
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.90"), 0);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.91"), 0);
    setenv("DICOMHIST_BACK_THREADS", "2", 1);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.90"), 2);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.91"), 2);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.201"), 0);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.70"), 0);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.9"), 0);
    ck_assert_int_eq(cli_decode_back_threads(NULL), 0);
    setenv("DICOMHIST_BACK_THREADS", "-1", 1); /* out of range or not a number: the default */
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.90"), 0);
    setenv("DICOMHIST_BACK_THREADS", "65", 1);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.90"), 0);
    setenv("DICOMHIST_BACK_THREADS", "1x", 1);
    ck_assert_int_eq(cli_decode_back_threads("1.2.840.10008.1.2.4.90"), 0);
    unsetenv("DICOMHIST_BACK_THREADS");
}
END_TEST

/* A series taken for the GPU offers its share to the others until it is done; a worker with
 * nothing to wait for helps nobody when no share has files (dh_plan_share_help's own loads are
 * tested in test_plan_share). */
START_TEST(gpu_series_offer_their_shares)
{
    cli_gpu_decode g;
    ck_assert_int_eq(cli_gpu_decode_start(&g, 0, 0), 0);
    g.ready = 1;
    g.pending = 40 * 1000;
    dh_plan_share *a = dh_plan_share_create(), *b = dh_plan_share_create();
    dh_ctx *ctx = dh_ctx_create();
    const char *note = NULL;
    ck_assert(!cli_gpu_decode_sharing(&g));
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, ctx, a, &note), CLI_DECODE_GPU);
    ck_assert(cli_gpu_decode_sharing(&g));
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, ctx, b, &note), CLI_DECODE_GPU);
    ck_assert_uint_eq(g.shared, 2);
    ck_assert_int_eq(cli_gpu_decode_help(&g, ctx), 0); /* neither load has started */
    ck_assert_int_eq(cli_gpu_decode_help(&g, NULL), 0);
    /* Slots full and a long queue: the core takes the next series, its share not offered. */
    dh_plan_share *c = dh_plan_share_create();
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 2, 0, ctx, c, &note), CLI_DECODE_CPU);
    ck_assert_uint_eq(g.shared, 2);
    cli_gpu_decode_done(&g, CLI_DECODE_CPU, NULL, 2, 1000, 2.0);
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, a, 2, 1000, 0.5);
    ck_assert_uint_eq(g.shared, 1);
    ck_assert_ptr_eq(g.shares[0], b);
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, b, 2, 1000, 0.5);
    ck_assert(!cli_gpu_decode_sharing(&g));
    ck_assert_uint_eq(g.helped_files, 0);
    cli_gpu_decode_stop(&g);
    dh_plan_share_free(a);
    dh_plan_share_free(b);
    dh_plan_share_free(c);
    dh_ctx_free(ctx);
}
END_TEST

/* The real loader, where the GPU decoders cannot run (CI): every series goes to the library. */
START_TEST(loader_without_gpu_decoders)
{
    char why[256];
    if (dh_gpu_decoders_available(why, sizeof why))
        return; /* a GPU host: the rule's tests above cover it; the batch runs in test_cli_gpu */
    cli_gpu_decode g;
    ck_assert_int_eq(cli_gpu_decode_start(&g, 5000, 0), 0);
    const char *note = NULL;
    ck_assert_int_eq(cli_gpu_decode_take(&g, 1000, 4, 0, NULL, NULL, &note), CLI_DECODE_GPU);
    ck_assert_str_eq(note, "");
    ck_assert(!g.loading && !g.ready);
    ck_assert_str_eq(g.reason, why);
    ck_assert_uint_eq(g.busy, 0);
    cli_gpu_decode_done(&g, CLI_DECODE_GPU, NULL, 4, 1000, 0.1);
    ck_assert_uint_eq(g.gpu_series, 0);
    cli_gpu_decode_stop(&g);
    /* JPEG lossless alone: a loader, nothing pending; after the head start it has finished. */
    ck_assert_int_eq(cli_gpu_decode_start(&g, 0, 1), 0);
    ck_assert(g.started);
    ck_assert(cli_gpu_decode_loaded(&g));
    ck_assert(!cli_gpu_decode_wait_usable(&g)); /* no GPU: the SV1 series stay with DCMTK */
    cli_gpu_decode_stop(&g);
}
END_TEST

START_TEST(sv1_into_device_memory_under_device_cuda)
{
    const char *sv1 = "1.2.840.10008.1.2.4.70";
    unsetenv("DH_GPU_JPEG_LOSSLESS");
    ck_assert(!cli_decode_device_sv1(sv1, DH_DEVICE_CUDA)); /* asked for only (run 81) */
    setenv("DH_GPU_JPEG_LOSSLESS", "1", 1);
    ck_assert(cli_decode_device_sv1(sv1, DH_DEVICE_CUDA));
    ck_assert(!cli_decode_device_sv1(sv1, DH_DEVICE_AUTO)); /* auto keeps DCMTK */
    ck_assert(!cli_decode_device_sv1(sv1, DH_DEVICE_CPU));
    const char *others[] = {"1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.201",
                            "1.2.840.10008.1.2.4.57", "1.2.840.10008.1.2.4.80",
                            "1.2.840.10008.1.2.4.7",  "1.2.840.10008.1.2.4.700",
                            "1.2.840.10008.1.2.1",    ""};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        ck_assert_msg(!cli_decode_device_sv1(others[i], DH_DEVICE_CUDA), "%s", others[i]);
    ck_assert(!cli_decode_device_sv1(NULL, DH_DEVICE_CUDA));
    setenv("DH_GPU_JPEG_LOSSLESS", "0", 1); /* DCMTK asked for */
    ck_assert(!cli_decode_device_sv1(sv1, DH_DEVICE_CUDA));
    setenv("DH_GPU_JPEG_LOSSLESS", "1", 1); /* nvJPEG asked for: the batch is the fast way */
    ck_assert(cli_decode_device_sv1(sv1, DH_DEVICE_CUDA));
    setenv("DH_GPU_JPEG_LOSSLESS", "all", 1);
    ck_assert(cli_decode_device_sv1(sv1, DH_DEVICE_CUDA));
    unsetenv("DH_GPU_JPEG_LOSSLESS");
}
END_TEST

int main(void)
{
    dh_test tests[] = {DH_TEST(unusable_decoders_leave_it_to_the_library),
                       DH_TEST(a_free_slot_takes_the_series),
                       DH_TEST(while_loading_the_first_slots_take_the_gpu),
                       DH_TEST(busy_slots_follow_the_prior_ratio),
                       DH_TEST(measured_rates_decide_in_seconds),
                       DH_TEST(while_loading_short_series_go_to_the_cpu),
                       DH_TEST(cpu_priors_per_syntax),
                       DH_TEST(gpu_priors_per_syntax),
                       DH_TEST(auto_loads_the_decoders_where_they_shorten_the_batch),
                       DH_TEST(auto_computes_beside_htj2k_decoding),
                       DH_TEST(device_series_by_default_through_the_share),
                       DH_TEST(feeders_taken_while_loading),
                       DH_TEST(load_threads_by_default_and_asked),
                       DH_TEST(syntaxes_the_gpu_reads),
                       DH_TEST(slots_per_syntax),
                       DH_TEST(scheduler_shares_the_work),
                       DH_TEST(gpu_series_offer_their_shares),
                       DH_TEST(back_threads_for_classic_j2k),
                       DH_TEST(loader_without_gpu_decoders),
                       DH_TEST(sv1_into_device_memory_under_device_cuda)};
    return dh_test_run(dh_test_suite("cli_batch_decode", 0, DH_TESTS(tests)));
}
