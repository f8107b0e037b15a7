// SPDX-License-Identifier: MIT
/*
 * test_support.c: shared helpers of the Check suites (see test_support.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "test_support.h"

#include "dicomhist.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The compiled-in folder, or $DH_SHARED_DICOM at run time: a build carried to another machine
 * (the GPU host) finds the real files wherever they were copied. */
static const char *shared_root(void)
{
    const char *env = getenv("DH_SHARED_DICOM");
    return env && *env ? env : DH_SHARED_DICOM;
}

const char *dh_test_shared(const char *relative)
{
    static _Thread_local char path[4096];
    if (!dh_test_have_shared())
        return NULL;
    snprintf(path, sizeof path, "%s/%s", shared_root(), relative);
    return path;
}

int dh_test_have_shared(void)
{
    struct stat st;
    char manifest[4096];
    snprintf(manifest, sizeof manifest, "%s/MANIFEST.tsv", shared_root());
    return stat(manifest, &st) == 0;
}

void dh_test_rng_seed(dh_test_rng *rng, uint64_t seed)
{
    rng->state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint64_t dh_test_rng_next(dh_test_rng *rng)
{
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return x * 0x2545f4914f6cdd1dull;
}

uint32_t dh_test_rng_below(dh_test_rng *rng, uint32_t n)
{
    return (uint32_t)((dh_test_rng_next(rng) >> 32) * n >> 32);
}

/* Roughly normal noise: the sum of four uniforms, centred, spread about +-2 * width. */
static int32_t noise(dh_test_rng *rng, uint32_t width)
{
    int32_t s = 0;
    for (int i = 0; i < 4; i++)
        s += (int32_t)dh_test_rng_below(rng, width + 1);
    return s - 2 * (int32_t)width;
}

void dh_test_fill_ct_like(uint16_t *out, size_t n, uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t p = dh_test_rng_below(&rng, 100);
        int32_t v;
        if (p < 40)
            v = 24 + noise(&rng, 4);
        else if (p < 55)
            v = 924 + noise(&rng, 10);
        else if (p < 85)
            v = 1064 + noise(&rng, 15);
        else
            v = 1700 + noise(&rng, 150);
        out[i] = (uint16_t)(v < 0 ? 0 : v > 4095 ? 4095 : v);
    }
}

double dh_test_reference_scores(const uint32_t *joint, uint32_t bf, uint32_t bm, double *mi,
                                double *hf, double *hm, double *hj)
{
    double n = 0, rows[256] = {0}, cols[256] = {0};
    for (uint32_t f = 0; f < bf; f++)
        for (uint32_t m = 0; m < bm; m++) {
            rows[f] += joint[f * bm + m];
            cols[m] += joint[f * bm + m];
            n += joint[f * bm + m];
        }
    *hf = *hm = *hj = 0;
    for (uint32_t f = 0; f < bf; f++)
        if (rows[f] > 0)
            *hf += rows[f] / n * log1p((n - rows[f]) / rows[f]);
    for (uint32_t m = 0; m < bm; m++)
        if (cols[m] > 0)
            *hm += cols[m] / n * log1p((n - cols[m]) / cols[m]);
    for (size_t i = 0; i < (size_t)bf * bm; i++)
        if (joint[i] > 0)
            *hj += joint[i] / n * log1p((n - joint[i]) / joint[i]);
    *mi = *hf + *hm - *hj;
    return n;
}

void dh_test_assert_close(double got, double want, double tol, const char *what)
{
    double scale = fabs(want) > 1e-300 ? fabs(want) : 1;
    ck_assert_msg(fabs(got - want) <= tol * scale, "%s: %.17g, reference %.17g", what, got, want);
}

char *dh_test_temp_dir(const char *prefix)
{
    size_t n = strlen(prefix) + 8;
    char *dir = malloc(n);
    ck_assert_ptr_nonnull(dir);
    snprintf(dir, n, "%s.XXXXXX", prefix);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

void dh_test_remove_tree(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

void dh_test_shell(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "command failed: %s", cmd);
}

void dh_test_need_tool(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    ck_assert_msg(system(cmd) == 0, "%s not found: the tests need it (tools/install-deps installs it)",
                  name);
}

void dh_test_add_case(Suite *suite, const char *name, double timeout, const dh_test *tests,
                      size_t n)
{
    TCase *tc = tcase_create(name);
    if (timeout > 0)
        tcase_set_timeout(tc, timeout);
    for (size_t k = 0; k < n; k++) {
        if (tests[k].loops > 0)
            tcase_add_loop_test(tc, tests[k].test, 0, tests[k].loops);
        else
            tcase_add_test(tc, tests[k].test);
    }
    suite_add_tcase(suite, tc);
}

Suite *dh_test_suite(const char *name, double timeout, const dh_test *tests, size_t n)
{
    Suite *s = suite_create(name);
    dh_test_add_case(s, name, timeout, tests, n);
    return s;
}

void dh_test_in_one_process(void)
{
    /* Check reads CK_FORK when the runner's fork status is left at its default. */
    setenv("CK_FORK", "no", 1);
}

int dh_test_run(Suite *suite)
{
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? 0 : 1;
}

/* Which half of a split program the arguments ask for: 0 the synthetic tests, 1 the real-file
 * ones, -1 an unknown argument (said on stderr). */
static int half_asked(int argc, char **argv)
{
    if (argc == 1)
        return 0;
    if (argc == 2 && strcmp(argv[1], "--real-files") == 0)
        return 1;
    fprintf(stderr, "usage: %s [--real-files]\n", argv[0]);
    return -1;
}

/* 1 when the real files are there to test with; says so where they are not. */
static int real_files_present(void)
{
    if (dh_test_have_shared())
        return 1;
    printf("%s is absent: the real-file tests are skipped\n", shared_root());
    return 0;
}

int dh_test_main_suites(int argc, char **argv, Suite *(*synthetic)(void),
                        Suite *(*real_files)(void))
{
    switch (half_asked(argc, argv)) {
    case 0:
        return dh_test_run(synthetic());
    case 1:
        return real_files_present() ? dh_test_run(real_files()) : DH_TEST_SKIP;
    default:
        return 2;
    }
}

int dh_test_main(int argc, char **argv, const char *name, double timeout, const dh_test *synthetic,
                 size_t n_synthetic, const dh_test *real_files, size_t n_real_files)
{
    char real_name[256];
    snprintf(real_name, sizeof real_name, "%s real files", name);
    switch (half_asked(argc, argv)) {
    case 0:
        return dh_test_run(dh_test_suite(name, timeout, synthetic, n_synthetic));
    case 1:
        return real_files_present()
                   ? dh_test_run(dh_test_suite(real_name, timeout, real_files, n_real_files))
                   : DH_TEST_SKIP;
    default:
        return 2;
    }
}

/* The textbook clip of test_support.h. */
void dh_test_reference_clip(const uint64_t *h, uint32_t len, int64_t lo, int64_t hi, double x,
                            uint64_t *out)
{
    memcpy(out, h, len * sizeof *out);
    int64_t first = -1, last = -1;
    uint64_t count = 0;
    for (int64_t i = lo; i <= hi; i++)
        if (h[i]) {
            if (first < 0)
                first = i;
            last = i;
            count += h[i];
        }
    if (first < 0)
        return;
    uint64_t span = (uint64_t)(last - first + 1);
    uint64_t limit = (uint64_t)(x * (double)count / (double)span);
    if (limit < 1)
        limit = 1;
    uint64_t excess = 0;
    for (int64_t i = first; i <= last; i++)
        if (out[i] > limit) {
            excess += out[i] - limit;
            out[i] = limit;
        }
    for (int64_t i = first; i <= last; i++)
        out[i] += excess / span;
    uint64_t rest = excess % span;
    if (rest) {
        uint64_t step = span / rest > 1 ? span / rest : 1;
        for (int64_t i = first; rest > 0 && i <= last; i += (int64_t)step, rest--)
            out[i]++;
    }
}

/* The standard output of a shell command (test_support.h). */
char *dh_test_command_output(const char *fmt, const char *arg)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, fmt, arg);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run: %s", cmd);
    char *buf = calloc(1, 65536);
    ck_assert_ptr_nonnull(buf);
    size_t n = fread(buf, 1, 65535, p);
    buf[n] = '\0';
    pclose(p);
    return buf;
}

struct dh_equalized *dh_test_equalize_cpu(struct dh_ctx *ctx, const struct dh_volume *volume)
{
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.device = DH_DEVICE_CPU;
    dh_equalized *r = NULL;
    ck_assert_int_eq(dh_equalize(ctx, volume, &p, &r), DH_OK);
    return r;
}

void *dh_test_help_until_stopped(void *arg)
{
    dh_test_share_helper *h = arg;
    dh_ctx *ctx = dh_ctx_create();
    dh_ctx_set_gpu_decode(ctx, 0);
    while (!atomic_load(h->stop)) {
        if (dh_plan_share_help(ctx, h->share))
            h->decoded++;
        else {
            struct timespec pause = {0, 100000};
            nanosleep(&pause, NULL);
        }
    }
    dh_ctx_free(ctx);
    return NULL;
}
