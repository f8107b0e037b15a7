// SPDX-License-Identifier: MIT
/*
 * test_public_header.c: the public header is plain C11 (this file is C, compiled with the
 * project's warnings), and what it promises about versions, status names and contexts holds.
 */
#include <dicomhist.h>

#include <stdlib.h>
#include <string.h>

#include "test_support.h"

START_TEST(version_matches_header)
{
    ck_assert_uint_eq(dh_version_number(), DH_VERSION_NUMBER);
    ck_assert_str_eq(dh_version_string(), DH_VERSION_STRING);
}
END_TEST

START_TEST(every_status_has_its_name)
{
    ck_assert_str_eq(dh_status_name(DH_OK), "DH_OK");
    ck_assert_str_eq(dh_status_name(DH_ERR_MALFORMED), "DH_ERR_MALFORMED");
    ck_assert_str_eq(dh_status_name(DH_ERR_CUDA), "DH_ERR_CUDA");
    ck_assert_str_eq(dh_status_name((dh_status)12345), "DH_ERR_UNKNOWN");
}
END_TEST

START_TEST(contexts_report_errors_and_free_null)
{
    dh_ctx *ctx = dh_ctx_create();
    ck_assert_ptr_nonnull(ctx);
    ck_assert_str_eq(dh_ctx_error(ctx), "");
    ck_assert_int_eq(dh_ctx_set_threads(ctx, -1), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "threads"));
    ck_assert_int_eq(dh_ctx_set_threads(ctx, 2), DH_OK);
    ck_assert_str_eq(dh_ctx_error(ctx), "");
    dh_ctx_free(ctx);
    dh_ctx_free(NULL);
    dh_volume_free(NULL);
    dh_volume_set_free(NULL);
    dh_histogram_free(NULL);
}
END_TEST

START_TEST(cuda_probe_never_fails)
{
    int a = dh_cuda_available();
    ck_assert(a == 0 || a == 1);
    ck_assert_int_eq(dh_cuda_available(), a); /* stable across calls */
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(version_matches_header), DH_TEST(every_status_has_its_name),
                             DH_TEST(contexts_report_errors_and_free_null),
                             DH_TEST(cuda_probe_never_fails)};
    return dh_test_run(dh_test_suite("public_header", 0, DH_TESTS(tests)));
}
