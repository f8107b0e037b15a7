# SPDX-License-Identifier: MIT
"""parzen_ctypes.py: the ctypes mirrors of kernels/mi_parzen.h's structures (dh_parzen_params,
dh_parzen_image, dh_mi_values), one copy for every script that calls the Parzen MI twin through
the test module tests/mi_parzen_ctypes.c (test_mi_parzen_sitk.py, bench/bench_mi_parzen_sitk.py).
"""
import ctypes


class Params(ctypes.Structure):
    _fields_ = [("bins", ctypes.c_uint32), ("fixed_window", ctypes.c_uint32),
                ("gradient_of", ctypes.c_uint32), ("log2", ctypes.c_int),
                ("fixed_range_given", ctypes.c_int), ("moving_range_given", ctypes.c_int),
                ("fixed_lo", ctypes.c_double), ("fixed_hi", ctypes.c_double),
                ("moving_lo", ctypes.c_double), ("moving_hi", ctypes.c_double)]


class Image(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("sample", ctypes.c_int), ("mask", ctypes.c_void_p)]


class Values(ctypes.Structure):
    _fields_ = [(name, ctypes.c_double)
                for name in ("mi", "nmi", "ecc", "h_fixed", "h_moving", "h_joint")] + [
        ("n", ctypes.c_uint64), ("status", ctypes.c_uint32), ("moving_lo", ctypes.c_int32),
        ("moving_hi", ctypes.c_int32), ("reserved", ctypes.c_uint32)]
