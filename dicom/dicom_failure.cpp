// SPDX-License-Identifier: MIT
/*
 * dicom_failure.cpp: fail(), how every file of the DICOM layer gives up: a failure with the
 * status and the reason, thrown up to the C entry points of dicom_read.cpp, which turn it into
 * a return value and a message.
 */
#include "dicom_internal.h"

#include <cstdarg>
#include <cstdio>

namespace dh_dicom_impl {

void fail(dh_dicom_status status, const char *fmt, ...)
{
    char buf[DH_DICOM_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    throw failure{status, buf};
}

} // namespace dh_dicom_impl
