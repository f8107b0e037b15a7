// SPDX-License-Identifier: MIT
// orthanc_guard_throw.cpp: C++ exceptions thrown from under C frames, standing for Orthanc's
// own (a boost::filesystem error is a std::exception; anything else may be thrown too), for
// tests/test_orthanc_guard.c.
#include <stdexcept>

extern "C" void guard_test_throw_std(const char *what)
{
    throw std::runtime_error(what);
}

extern "C" void guard_test_throw_other(int value)
{
    throw value;
}
