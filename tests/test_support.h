// SPDX-License-Identifier: MIT
/*
 * test_support.h: what every Check suite shares: where the real files are, how a suite reports
 * itself skipped, deterministic random data, reference entropies of a joint histogram, a
 * relative-error assertion, tables of tests made into suites, and the runners and main that exit
 * the way ctest reads.
 */
#ifndef DH_TEST_SUPPORT_H
#define DH_TEST_SUPPORT_H

#include <check.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DH_TEST_SKIP 77 /* ctest SKIP_RETURN_CODE */

/* Path of a file under ../shared/dicom (static buffer per call site is not kept: copy it).
 * Returns NULL when the shared folder is absent. */
const char *dh_test_shared(const char *relative);

/* 1 when ../shared/dicom is present. */
int dh_test_have_shared(void);

/* A thread helping the loads that run on a dh_plan_share (dh_plan_share_help, with its own
 * context and the CPU decoders) until *stop is set: pthread_create(&id, NULL,
 * dh_test_help_until_stopped, &helper). decoded counts the files it decoded. */
typedef struct dh_test_share_helper {
    struct dh_plan_share *share;
    atomic_int *stop;
    int decoded;
} dh_test_share_helper;
void *dh_test_help_until_stopped(void *helper);

/* xorshift64*: the same stream on every machine, so a failure can be replayed. */
typedef struct dh_test_rng {
    uint64_t state;
} dh_test_rng;
void dh_test_rng_seed(dh_test_rng *rng, uint64_t seed);
uint64_t dh_test_rng_next(dh_test_rng *rng);
/* Uniform in [0, n). */
uint32_t dh_test_rng_below(dh_test_rng *rng, uint32_t n);

/* CT-like 12-bit values: 40% air near 24, 15% fat near 924, 30% soft tissue near 1064, 15% bone
 * spread around 1700 (the mix ../shared/docs/gpu.md measures with). */
void dh_test_fill_ct_like(uint16_t *out, size_t n, uint64_t seed);

/* Entropies (nats) of a joint histogram of bf fixed rows by bm moving columns, at most 256 of
 * each, by the textbook formula in plain loops: -p ln p written p ln(1 + (n - c) / c), libm's
 * log1p keeping the digits of a dominant bin, nothing of the library's arithmetic. Sets mi,
 * hf, hm, hj and returns the total count n. */
double dh_test_reference_scores(const uint32_t *joint, uint32_t bf, uint32_t bm, double *mi,
                                double *hf, double *hm, double *hj);

/* Asserts |got - want| <= tol * |want| (tol absolute where want is 0); `what` names the value. */
void dh_test_assert_close(double got, double want, double tol, const char *what);

/* A fresh folder made from `prefix` + ".XXXXXX" (asserted); free() the returned path. */
char *dh_test_temp_dir(const char *prefix);

/* Removes a folder and everything in it (asserted). */
void dh_test_remove_tree(const char *dir);

/* Runs a printf-formatted shell command and asserts that it succeeded (making test trees). */
void dh_test_shell(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Fails the test unless a command-line tool the tests need (DCMTK's, dicom3tools', OpenJPEG's,
 * OpenJPH's: tools/install-deps installs them all) is on the PATH: a test never passes without
 * doing its work. */
void dh_test_need_tool(const char *name);

/* One entry of a table of tests: with `loops` > 0, Check runs it once for each _i in
 * [0, loops). Tables are built inside a function: START_TEST's names are not constants. Write
 * entries with DH_TEST and DH_TEST_LOOP. */
typedef struct dh_test {
    const TTest *test;
    int loops;
} dh_test;

/* Entries of a table: one test, or a loop test run for _i = 0 .. loops - 1. */
#define DH_TEST(test) {(test), 0}
#define DH_TEST_LOOP(test, loops) {(test), (loops)}

/* A table and its length, as the two arguments the functions below take. */
#define DH_TESTS(table) (table), (sizeof(table) / sizeof(table)[0])

/* Adds a case named `name` holding tests[0..n), each allowed `timeout` seconds (0 keeps Check's
 * default of 4). */
void dh_test_add_case(Suite *suite, const char *name, double timeout, const dh_test *tests,
                      size_t n);

/* A suite of one case, both named `name` (see dh_test_add_case). */
Suite *dh_test_suite(const char *name, double timeout, const dh_test *tests, size_t n);

/* Runs every test in this process instead of a forked child each: a child cannot use the CUDA
 * context its parent made. GPU suites call it before running. */
void dh_test_in_one_process(void);

/* Runs a suite and returns the process exit status: 0 when everything passed, 1 otherwise. */
int dh_test_run(Suite *suite);

/* The main of a program whose tests ctest runs as two entries, so that a test that could not run
 * says skipped rather than passed: `name` runs the suite synthetic() builds, the tests that need
 * nothing beside the checkout; `name_real_files` (the argument --real-files) runs real_files(),
 * the tests that read ../shared/dicom, and reports DH_TEST_SKIP where that folder is absent.
 * Returns the exit status (2 for an unknown argument). */
int dh_test_main_suites(int argc, char **argv, Suite *(*synthetic)(void),
                        Suite *(*real_files)(void));

/* The same for a program of two tables, each run as a suite of one case (dh_test_suite): `name`
 * for the synthetic tests, `name` + " real files" for those that read ../shared/dicom. */
int dh_test_main(int argc, char **argv, const char *name, double timeout, const dh_test *synthetic,
                 size_t n_synthetic, const dh_test *real_files, size_t n_real_files);

/* The textbook contrast limit of docs/equalization.md over bins lo..hi of h (len bins), written
 * apart from the library: cap every bin at max(1, floor(x * count / span)) (span from the first to
 * the last non-empty bin), spread the excess evenly over the span, then the remainder one each by
 * a stride of max(span / rest, 1) from the first bin. out (len bins) gets h clipped. */
void dh_test_reference_clip(const uint64_t *h, uint32_t len, int64_t lo, int64_t hi, double x,
                            uint64_t *out);

/* The standard output of a shell command, `fmt` given one string argument (at most 64 KiB, NUL
 * terminated; free it). */
char *dh_test_command_output(const char *fmt, const char *arg);

/* The volume equalized on the CPU with the default parameters (asserting success); free it with
 * dh_equalized_free. */
struct dh_ctx;
struct dh_volume;
struct dh_equalized *dh_test_equalize_cpu(struct dh_ctx *ctx, const struct dh_volume *volume);

#endif /* DH_TEST_SUPPORT_H */
