/* SPDX-License-Identifier: MIT */
/*
 * test_orthanc_guard.c: plugin/orthanc/cpp_guard.cpp, which keeps a C++ exception thrown inside
 * Orthanc from ending the server on the plugin's own threads: the exception is stopped at the
 * guard with its reason, the C frames it leaves run their cleanup handlers on the way (what gives
 * a derive's claim up: this file is built with -fexceptions, as the plugin's C is), and a call
 * that returns is untouched. MIT like every test; the program links the plugin's GPL-3.0-or-later
 * code and is under the GPL as a whole.
 */
#include <string.h>

#include "cpp_guard.h"
#include "test_support.h"

void guard_test_throw_std(const char *what);
void guard_test_throw_other(int value);

typedef struct frame_log {
    int cleaned;  /* cleanup handlers run */
    int returned; /* bodies that ran to their end */
    int throw_kind; /* 0: none, 1: std::runtime_error, 2: an int */
} frame_log;

static void count_cleanup(frame_log **log)
{
    (*log)->cleaned++;
}

/* Two C frames deep, each holding a cleanup handler, then the throw. */
static void inner(frame_log *log)
{
    __attribute__((cleanup(count_cleanup))) frame_log *guard = log;
    if (log->throw_kind == 1)
        guard_test_throw_std("Error while accessing the filesystem");
    else if (log->throw_kind == 2)
        guard_test_throw_other(42);
    log->returned++;
}

static void outer(void *p)
{
    frame_log *log = p;
    __attribute__((cleanup(count_cleanup))) frame_log *guard = log;
    inner(log);
    log->returned++;
}

START_TEST(std_exception_stopped_with_its_reason)
{
    frame_log log = {0, 0, 1};
    char why[64] = "untouched";
    ck_assert_int_eq(dho_run_guarded(outer, &log, why, sizeof why), -1);
    ck_assert_str_eq(why, "Error while accessing the filesystem");
    ck_assert_int_eq(log.cleaned, 2); /* both frames' handlers ran */
    ck_assert_int_eq(log.returned, 0);
}
END_TEST

START_TEST(other_exception_stopped)
{
    frame_log log = {0, 0, 2};
    char why[64] = "";
    ck_assert_int_eq(dho_run_guarded(outer, &log, why, sizeof why), -1);
    ck_assert_str_eq(why, "an exception that is not a std::exception");
    ck_assert_int_eq(log.cleaned, 2);
}
END_TEST

START_TEST(reason_truncated_to_its_buffer)
{
    frame_log log = {0, 0, 1};
    char why[8];
    memset(why, 'x', sizeof why);
    ck_assert_int_eq(dho_run_guarded(outer, &log, why, sizeof why), -1);
    ck_assert_str_eq(why, "Error w");
}
END_TEST

START_TEST(returning_call_untouched)
{
    frame_log log = {0, 0, 0};
    char why[16] = "untouched";
    ck_assert_int_eq(dho_run_guarded(outer, &log, why, sizeof why), 0);
    ck_assert_str_eq(why, "untouched");
    ck_assert_int_eq(log.cleaned, 2);
    ck_assert_int_eq(log.returned, 2);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(std_exception_stopped_with_its_reason),
                             DH_TEST(other_exception_stopped),
                             DH_TEST(reason_truncated_to_its_buffer),
                             DH_TEST(returning_call_untouched)};
    return dh_test_run(dh_test_suite("orthanc_guard", 0, DH_TESTS(tests)));
}
