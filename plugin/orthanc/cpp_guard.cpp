// SPDX-License-Identifier: GPL-3.0-or-later
// cpp_guard.cpp: the one place the plugin catches C++ exceptions (cpp_guard.h says why).
#include "cpp_guard.h"

#include <cstdio>
#include <exception>

extern "C" int dho_run_guarded(void (*fn)(void *), void *arg, char *why, size_t why_len)
{
    try {
        fn(arg);
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(why, why_len, "%s", e.what());
    } catch (...) {
        std::snprintf(why, why_len, "an exception that is not a std::exception");
    }
    return -1;
}
