#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_nvimgcodec.py COPIES RUNS FILE...: NVIDIA's nvImageCodec (Python API, the wheel
nvidia-nvimgcodec-cu13 over nvJPEG2000) decoding the same code streams bench_decode --batch
decodes, the way MONAI's pydicom plugin calls it (one Decoder, DecodeParams(allow_any_depth=True,
color_spec=UNCHANGED)), into device memory, in batches of COPIES copies of each file's frames.

Bit-exactness first: every decoded frame is checked against FILE.values, the CPU read's stored
values that bench_decode --batch writes (run it first); a difference stops the script (exit 1).
Then one batch to warm up and RUNS timed; MB/s of decoded pixels (rows x columns x frames x 2,
10^6) of the median, the clock stopped once the device is idle, as for ours. One Markdown row
per file, in bench_decode --batch's table. Needs CuPy (the synchronisation and the copies back);
without nvImageCodec it says so and exits 0, so tools/gpu-check runs on without it.

The frames are taken from the DICOM file by a minimal reader of encapsulated pixel data
(explicit VR little endian, one fragment per frame, as tests/gpu_decode/make_streams.py writes
them): no pydicom on the GPU machine.
"""
import struct
import sys
import time

import numpy as np

PIXEL_DATA = b"\xe0\x7f\x10\x00OB\x00\x00\xff\xff\xff\xff"
ITEM, SEQUENCE_END = b"\xfe\xff\x00\xe0", b"\xfe\xff\xdd\xe0"


def frames_of(path):
    """The code stream of each frame (one fragment per frame after the offset table)."""
    data = open(path, "rb").read()
    at = data.rindex(PIXEL_DATA) + len(PIXEL_DATA)
    items = []
    while data[at:at + 4] == ITEM:
        (length,) = struct.unpack_from("<I", data, at + 4)
        items.append(data[at + 8:at + 8 + length])
        at += 8 + length
    if data[at:at + 4] != SEQUENCE_END or len(items) < 2:
        sys.exit(f"bench_nvimgcodec: {path}: not one fragment per frame as expected")
    # An odd-length stream is padded to even with a zero after its EOC: cut it, as ours does.
    return [f[:-1] if f.endswith(b"\xff\xd9\x00") else f for f in items[1:]]


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: bench_nvimgcodec.py COPIES RUNS FILE...")
    copies, runs = int(sys.argv[1]), int(sys.argv[2])
    try:
        import cupy as cp
        from nvidia import nvimgcodec
    except ImportError as e:
        print(f"bench_nvimgcodec: skipped ({e})")
        return 0
    decoder = nvimgcodec.Decoder()
    params = nvimgcodec.DecodeParams(allow_any_depth=True,
                                     color_spec=nvimgcodec.ColorSpec.UNCHANGED)
    print(f"nvImageCodec {nvimgcodec.__version__} (CUDA {nvimgcodec.__cuda_version__})")
    for path in sys.argv[3:]:
        name = path.rsplit("/", 1)[-1]
        frames = frames_of(path)
        expected = np.fromfile(path + ".values", dtype=np.uint16).reshape(len(frames), -1)
        batch = frames * copies
        images = decoder.decode(batch, params=params)
        cp.cuda.runtime.deviceSynchronize()
        for i, image in enumerate(images):
            got = None if image is None else cp.asnumpy(cp.asarray(image)).astype(np.uint16)
            if got is None or got.size != expected.shape[1] or \
                    not np.array_equal(got.ravel(), expected[i % len(frames)]):
                print(f"| {name} | nvImageCodec | frame {i}: DIFFERENT from the CPU read: stop |")
                return 1
        megabytes = expected.size * 2 * copies / 1e6
        seconds = []
        for _ in range(runs):
            t0 = time.perf_counter()
            images = decoder.decode(batch, params=params)
            cp.cuda.runtime.deviceSynchronize()
            seconds.append(time.perf_counter() - t0)
            if any(image is None for image in images):
                print(f"| {name} | nvImageCodec | a frame failed: stop |")
                return 1
        median = sorted(seconds)[runs // 2]
        print(f"| {name} | nvImageCodec {nvimgcodec.__version__}, batch of {len(batch)} frames "
              f"(values equal to the CPU read) | {megabytes / median:.0f} MB/s ({median * 1e3:.1f} "
              f"ms) | |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
