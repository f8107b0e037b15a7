/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * cpp_guard.h: a C++ exception stopped at the root of a thread of ours. Orthanc's SDK calls
 * catch only its own OrthancException; another exception thrown inside Orthanc during a call (a
 * boost::filesystem error of its storage, std::bad_alloc) unwinds into the caller. On an HTTP or
 * job thread Orthanc's own frames above the plugin catch it; on a thread the plugin started
 * (auto-equalization's dispatcher and workers) nothing would, and the C++ runtime would end the
 * whole server with std::terminate. The plugin's C is built with -fexceptions, so frames left by
 * the unwinding run their cleanup handlers (a derive gives its claim up) on the way here.
 */
#ifndef DH_ORTHANC_CPP_GUARD_H
#define DH_ORTHANC_CPP_GUARD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Calls fn(arg). 0 when it returned; -1 when an exception left it, with its what() (or "an
 * exception that is not a std::exception") in why[0..why_len). */
int dho_run_guarded(void (*fn)(void *), void *arg, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_ORTHANC_CPP_GUARD_H */
