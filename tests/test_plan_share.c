// SPDX-License-Identifier: MIT
/*
 * test_plan_share.c: dh_plan_share (issue 24, session 17), one series' files decoded by its owner
 * and by helper threads at once, as a batch's GPU and idle cores share a JPEG 2000 series. The
 * shared load must give exactly dh_plan_load_series's volume (samples, slice order and sources,
 * warnings, decoders) and failures, whoever decoded which file; helpers outside a load find
 * nothing; a load without helpers is the plain load.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dh_dicom.h"
#include "dicomhist.h"
#include "plan_share.h"
#include "test_support.h"

static char *tree;

/* tree/in/j2k: the JPEG 2000 phantom series, its IM0007.dcm with marker codes written into its
 * packet data near the end (the scan accepts it, its decode refuses it: a failure the helpers
 * may meet as well as the owner). */
static void make_tree(void)
{
    tree = dh_test_temp_dir("/tmp/dh-share");
    dh_test_shell("mkdir -p %s/in && cp -r %s/ct_phantom_jpeg2000 %s/in/j2k && "
                  "f=%s/in/j2k/IM0007.dcm && printf '\\377\\220\\377\\220\\377\\220' | "
                  "dd of=$f bs=1 seek=$(( $(stat -c %%s $f) - 300 )) conv=notrunc 2>/dev/null",
                  tree, DH_SAMPLE_DATA, tree, tree);
}

static void remove_tree(void)
{
    dh_test_remove_tree(tree);
    free(tree);
}


/* b equals a, a's decoder included, but where gpu_mix: an owner decoding on the GPU beside back
 * or load threads on the CPU decoders gives "nvjpeg2k+openjpeg" where the GPU read all of a
 * (on a GPU host; elsewhere the GPU reads nothing and the decoders are the same). */
static void assert_same_set_as(const dh_volume_set *a, const dh_volume_set *b, int gpu_mix)
{
    ck_assert_uint_eq(dh_volume_set_count(a), dh_volume_set_count(b));
    ck_assert_uint_eq(dh_volume_set_failure_count(a), dh_volume_set_failure_count(b));
    for (size_t i = 0; i < dh_volume_set_failure_count(a); i++) {
        ck_assert_str_eq(dh_volume_set_failure_path(a, i), dh_volume_set_failure_path(b, i));
        ck_assert_str_eq(dh_volume_set_failure_message(a, i), dh_volume_set_failure_message(b, i));
    }
    for (size_t k = 0; k < dh_volume_set_count(a); k++) {
        const dh_volume *va = dh_volume_set_volume(a, k), *vb = dh_volume_set_volume(b, k);
        ck_assert_uint_eq(dh_volume_slices(va), dh_volume_slices(vb));
        ck_assert_uint_eq(dh_volume_sample_count(va), dh_volume_sample_count(vb));
        ck_assert_int_eq(
            memcmp(dh_volume_data(va), dh_volume_data(vb), dh_volume_sample_count(va) * 2), 0);
        for (uint32_t s = 0; s < dh_volume_slices(va); s++)
            ck_assert_str_eq(dh_volume_slice_source(va, s), dh_volume_slice_source(vb, s));
        ck_assert_uint_eq(dh_volume_warning_count(va), dh_volume_warning_count(vb));
        const char *na = "", *nb = "";
        const char *da = dh_volume_decoder(va, &na), *db = dh_volume_decoder(vb, &nb);
        if (gpu_mix && strcmp(da, db) != 0) {
            ck_assert_str_eq(da, "nvjpeg2k");
            ck_assert_str_eq(db, "nvjpeg2k+openjpeg");
            continue;
        }
        ck_assert_str_eq(da, db);
        ck_assert_str_eq(na, nb);
    }
}

static void assert_same_set(const dh_volume_set *a, const dh_volume_set *b)
{
    assert_same_set_as(a, b, 0);
}

START_TEST(shared_load_equals_the_plain_load)
{
    char in[4096];
    snprintf(in, sizeof in, "%s/in", tree);
    const char *paths[] = {in};
    dh_ctx *ctx = dh_ctx_create();
    dh_ctx_set_gpu_decode(ctx, 0); /* here both sides use OpenJPEG: the GPU run checks the mix */
    dh_plan *plan = NULL;
    ck_assert_int_eq(dh_plan_scan(ctx, paths, 1, &plan), DH_OK);
    ck_assert_uint_eq(dh_plan_series_count(plan), 1);
    dh_volume_set *plain = NULL;
    ck_assert_int_eq(dh_plan_load_series(ctx, plan, 0, &plain), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(plain), 1);
    ck_assert_uint_eq(dh_volume_set_failure_count(plain), 1); /* the cut slice, alone */
    ck_assert_ptr_nonnull(strstr(dh_volume_set_failure_path(plain, 0), "IM0007.dcm"));

    dh_plan_share *share = dh_plan_share_create();
    ck_assert_ptr_nonnull(share);
    dh_ctx *lone = dh_ctx_create();
    ck_assert_int_eq(dh_plan_share_help(lone, share), 0); /* no load runs */
    ck_assert_uint_eq(dh_plan_share_left(share), 0);
    ck_assert_int_eq(dh_plan_share_help(lone, NULL), 0);
    ck_assert_uint_eq(dh_plan_share_left(NULL), 0);

    /* No helper: the plain load, through the share. */
    dh_volume_set *alone = NULL;
    ck_assert_int_eq(dh_plan_load_series_shared(ctx, plan, 0, share, &alone), DH_OK);
    assert_same_set(plain, alone);
    dh_volume_set_free(alone);

    /* Three helpers beside an owner on one thread, then on two: which files the helpers get is
     * a race, so the loads repeat until some did (and every load must equal the plain one). */
    size_t n = dh_plan_series_file_count(plan, 0);
    int helped_loads = 0, tries = 0;
    /* With read timing on, every file decoded counts once (job times per slot): n per load says
     * each file was decoded exactly once, none twice and none left out. */
    ck_assert_int_eq(dh_ctx_set_read_timing(ctx, 1), DH_OK);
    for (; tries < 200 && helped_loads < 5; tries++) {
        ck_assert_int_eq(dh_ctx_set_threads(ctx, 1 + tries % 2), DH_OK);
        atomic_int stop;
        atomic_init(&stop, 0);
        dh_test_share_helper h[3];
        pthread_t id[3];
        for (int t = 0; t < 3; t++) {
            h[t] = (dh_test_share_helper){.share = share, .stop = &stop};
            ck_assert_int_eq(pthread_create(&id[t], NULL, dh_test_help_until_stopped, &h[t]), 0);
        }
        dh_volume_set *shared = NULL;
        dh_read_times before, after;
        ck_assert_int_eq(dh_ctx_read_times(ctx, &before), DH_OK);
        ck_assert_int_eq(dh_plan_load_series_shared(ctx, plan, 0, share, &shared), DH_OK);
        ck_assert_int_eq(dh_ctx_read_times(ctx, &after), DH_OK);
        ck_assert_uint_eq(after.files - before.files, n);
        ck_assert_uint_eq(dh_plan_share_left(share), 0); /* closed once the load returns */
        atomic_store(&stop, 1);
        int decoded = 0;
        for (int t = 0; t < 3; t++) {
            pthread_join(id[t], NULL);
            decoded += h[t].decoded;
        }
        ck_assert_int_le(decoded, (int)n);
        helped_loads += decoded > 0;
        assert_same_set(plain, shared);
        dh_volume_set_free(shared);
    }
    ck_assert_int_eq(helped_loads, 5);
    ck_assert_int_eq(dh_plan_share_help(lone, share), 0);

    /* Back threads: with the owner's GPU decoding on (where no GPU is, the library reads on the
     * CPU and says why), two threads of the load decode from the back with the CPU decoders;
     * with it off, none are added. Either way the plain load's set, each file once. */
    dh_ctx *gpu = dh_ctx_create();
    ck_assert_int_eq(dh_ctx_set_threads(gpu, 1), DH_OK);
    ck_assert_int_eq(dh_ctx_set_read_timing(gpu, 1), DH_OK);
    dh_volume_set *gpu_plain = NULL;
    ck_assert_int_eq(dh_plan_load_series(gpu, plan, 0, &gpu_plain), DH_OK);
    dh_plan_share_set_back_threads(share, 2);
    dh_plan_share_set_back_threads(NULL, 2);
    for (int round = 0; round < 4; round++) {
        dh_ctx *owner = round % 2 ? ctx : gpu;
        dh_read_times before, after;
        dh_volume_set *shared = NULL;
        ck_assert_int_eq(dh_ctx_read_times(owner, &before), DH_OK);
        ck_assert_int_eq(dh_plan_load_series_shared(owner, plan, 0, share, &shared), DH_OK);
        ck_assert_int_eq(dh_ctx_read_times(owner, &after), DH_OK);
        ck_assert_uint_eq(after.files - before.files, n);
        assert_same_set_as(round % 2 ? plain : gpu_plain, shared, !(round % 2));
        dh_volume_set_free(shared);
    }
    dh_plan_share_set_back_threads(share, 0);
    dh_volume_set_free(gpu_plain);
    dh_ctx_free(gpu);

    /* The usual refusals, as dh_plan_load_series's. */
    dh_volume_set *bad = NULL;
    ck_assert_int_eq(dh_plan_load_series_shared(ctx, plan, 9, share, &bad),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(bad);
    ck_assert_int_eq(dh_plan_load_series_shared(ctx, plan, 0, share, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    dh_plan_share_free(share);
    dh_plan_share_free(NULL);
    dh_ctx_free(lone);
    dh_volume_set_free(plain);
    dh_plan_free(plan);
    dh_ctx_free(ctx);
}
END_TEST

/* Load threads on a real series: set before the GPU decoders' load has settled (this test's
 * process has not asked for them yet), they decode from the back beside an owner whose first GPU
 * frame starts that load and waits for it (with no GPU here it fails within milliseconds, so
 * only round 0 may see them; on a GPU host it takes about 0.6 s); once it has settled none
 * start. Every load gives the plain load's set, each file decoded once. That the threads run and
 * stop is load_threads_stop_once_the_load_settles' check. */
START_TEST(load_threads_while_the_decoders_load)
{
    char in[4096];
    snprintf(in, sizeof in, "%s/in", tree);
    const char *paths[] = {in};
    dh_ctx *gpu = dh_ctx_create();
    ck_assert_int_eq(dh_ctx_set_threads(gpu, 1), DH_OK);
    ck_assert_int_eq(dh_ctx_set_read_timing(gpu, 1), DH_OK);
    dh_plan *plan = NULL;
    ck_assert_int_eq(dh_plan_scan(gpu, paths, 1, &plan), DH_OK);
    size_t n = dh_plan_series_file_count(plan, 0);
    dh_plan_share *share = dh_plan_share_create();
    dh_plan_share_set_load_threads(share, 2);
    dh_plan_share_set_load_threads(NULL, 2);
    dh_volume_set *sets[3] = {NULL, NULL, NULL};
    for (int round = 0; round < 3; round++) {
        if (round == 2) { /* settled from here on: the load adds no thread */
            char why[256];
            dh_gpu_decoders_available(why, sizeof why);
        }
        dh_read_times before, after;
        ck_assert_int_eq(dh_ctx_read_times(gpu, &before), DH_OK);
        ck_assert_int_eq(dh_plan_load_series_shared(gpu, plan, 0, share, &sets[round]), DH_OK);
        ck_assert_int_eq(dh_ctx_read_times(gpu, &after), DH_OK);
        ck_assert_uint_eq(after.files - before.files, n);
    }
    dh_volume_set *plain = NULL;
    ck_assert_int_eq(dh_plan_load_series(gpu, plan, 0, &plain), DH_OK);
    ck_assert_uint_eq(dh_volume_set_failure_count(plain), 1);
    for (int round = 0; round < 3; round++) {
        assert_same_set_as(plain, sets[round], 1);
        dh_volume_set_free(sets[round]);
    }
    dh_volume_set_free(plain);
    dh_plan_share_free(share);
    dh_plan_free(plan);
    dh_ctx_free(gpu);
}
END_TEST

/* dh_plan_share_run's load threads with a stand-in decode: each slot records the options it was
 * decoded with (the owner's gpu_decode 1, a load thread's 0) and how often, 2 ms each. While the
 * GPU decoders' load has not settled in this process (the normal build, whose loader runs only
 * when asked) a load thread decodes from the back; the owner's sixth slot settles it (asks for
 * the decoders, which fails within milliseconds without a GPU), after which the load thread
 * finishes its slot and stops: no slot of it begins after the settle but the one it had
 * claimed. Once
 * settled (always in a build without the decoders) none starts; none with the owner's GPU
 * decoding off either. Every slot once. */
typedef struct stand_in {
    atomic_int times[96];
    atomic_int on_cpu[96];
    atomic_int owner_slots;
    atomic_int after_settle; /* load-thread slots begun once the load had settled */
    int settle_at; /* the owner's slot count at which it asks for the decoders; 0: never */
} stand_in;

static void stand_in_decode(void *job, size_t slot, const dh_dicom_read_options *o)
{
    stand_in *j = job;
    atomic_fetch_add(&j->times[slot], 1);
    if (!o->gpu_decode) {
        atomic_fetch_add(&j->on_cpu[slot], 1);
        if (dh_dicom_gpu_decoders_settled())
            atomic_fetch_add(&j->after_settle, 1);
    } else if (atomic_fetch_add(&j->owner_slots, 1) + 1 == j->settle_at) {
        char why[256];
        dh_gpu_decoders_available(why, sizeof why);
    }
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
}

static int run_stand_in(dh_plan_share *share, int gpu_decode, int settle_at, int *after_settle)
{
    stand_in j;
    for (int i = 0; i < 96; i++)
        atomic_init(&j.times[i], 0), atomic_init(&j.on_cpu[i], 0);
    atomic_init(&j.owner_slots, 0);
    atomic_init(&j.after_settle, 0);
    j.settle_at = settle_at;
    dh_dicom_read_options o = {0};
    o.gpu_decode = gpu_decode;
    dh_plan_share_run(share, 96, 1, stand_in_decode, &j, &o);
    int cpu = 0;
    for (int i = 0; i < 96; i++) {
        ck_assert_int_eq(atomic_load(&j.times[i]), 1);
        cpu += atomic_load(&j.on_cpu[i]);
    }
    if (after_settle)
        *after_settle = atomic_load(&j.after_settle);
    return gpu_decode ? cpu : 0;
}

START_TEST(load_threads_stop_once_the_load_settles)
{
    dh_plan_share *share = dh_plan_share_create();
    dh_plan_share_set_load_threads(share, 1);
    ck_assert_int_eq(run_stand_in(share, 0, 0, NULL), 0); /* the owner on the CPU: none added */
    if (!dh_dicom_gpu_decoders_settled()) {
        int after = -1;
        int by_load_thread = run_stand_in(share, 1, 6, &after);
        ck_assert_int_ge(by_load_thread, 1);
        /* At most the slot claimed just before the settle: a thread that ran on would begin
         * dozens here, where the settle takes milliseconds (on a GPU host it takes 0.6 s, long
         * enough for the load thread to take most slots before it: allowed). */
        ck_assert_int_le(after, 1);
    }
    ck_assert(dh_dicom_gpu_decoders_settled());
    ck_assert_int_eq(run_stand_in(share, 1, 0, NULL), 0); /* settled: none starts */
    dh_plan_share_set_load_threads(share, 0);
    dh_plan_share_free(share);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan_share");
    TCase *tc = tcase_create("plan_share");
    tcase_add_checked_fixture(tc, make_tree, remove_tree);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, shared_load_equals_the_plain_load);
    tcase_add_test(tc, load_threads_while_the_decoders_load);
    tcase_add_test(tc, load_threads_stop_once_the_load_settles);
    suite_add_tcase(s, tc);
    return dh_test_run(s);
}
