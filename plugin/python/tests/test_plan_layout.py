# SPDX-License-Identifier: MIT
"""The device plan's result layout (dicomhist/_device_plan.py), on the CPU without CuPy: a
planned CuPy ParzenMI call takes its two results from one pool allocation (session 20, issue 22's
host cost). The GPU half (test_device_plan.py) checks that the call uses it and gives the same
bits."""
import numpy as np

from dicomhist import _device_plan


def test_cupy_pair_layout_aligns_the_second_result():
    """CuPy's two results of a planned ParzenMI call share one pool allocation: the gradient
    starts at the first multiple of 256 after the records (the pool's own alignment), and the
    allocation holds both exactly (no cupy needed to lay it out)."""
    k = _device_plan._CupyKinds.__new__(_device_plan._CupyKinds)
    for count, shape in ((1, (8, 8)), (5, (5, 32, 32)), (4, (4, 3, 7))):
        total, offset, (s0, d0), (s1, d1) = k.pair_layout((((count, 72), "uint8"),
                                                           (shape, "float32")))
        assert offset % 256 == 0 and offset >= count * 72 > offset - 256
        assert total == offset + 4 * int(np.prod(shape))
        assert (s0, d0, s1, d1) == ((count, 72), np.dtype(np.uint8), shape,
                                    np.dtype(np.float32))
