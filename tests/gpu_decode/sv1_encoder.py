# SPDX-License-Identifier: MIT
"""sv1_encoder.py: a minimal JPEG lossless SV1 encoder (ITU-T T.81 annex H: predictor 1, no point
transform, one component, Huffman table from the frame's own counts), for what DCMTK's dcmcjpeg
does not write: restart intervals (DRI, RSTn every k rows), and a frame header whose precision is
BitsStored (dcmcjpeg writes 16 for 12-bit data in 16-bit words). Its streams are checked against
DCMTK's decoder by the scripts that use it (make_sv1_sweep.py, make_streams.py --bench).
"""
import heapq
import os
import subprocess
import tempfile

import numpy as np
import pydicom


def categories(diff):
    a = np.abs(diff)
    ssss = np.zeros(a.shape, np.int64)
    nz = a > 0
    ssss[nz] = np.floor(np.log2(a[nz])).astype(np.int64) + 1
    return ssss


def huffman_lengths(freq):
    """Code lengths (at most 16) for the symbols with a count, the all-ones code left unused."""
    syms = [s for s in range(17) if freq[s] > 0]
    if len(syms) == 1:
        return {syms[0]: 1}
    heap = [(freq[s], i, [s]) for i, s in enumerate(syms)]
    heapq.heapify(heap)
    length = {s: 0 for s in syms}
    tie = len(syms)
    while len(heap) > 1:
        f1, _, a = heapq.heappop(heap)
        f2, _, b = heapq.heappop(heap)
        for s in a + b:
            length[s] += 1
        heapq.heappush(heap, (f1 + f2, tie, a + b))
        tie += 1
    longest = max(syms, key=lambda s: (length[s], s))
    length[longest] += 1  # the Kraft sum drops below 1: no code of all ones
    assert max(length.values()) <= 16
    return length


def encode_sv1(px, bits, restart_rows):
    rows, cols = px.shape
    x = px.astype(np.int64)
    pred = np.empty_like(x)
    pred[:, 1:] = x[:, :-1]
    pred[1:, 0] = x[:-1, 0]
    starts = range(0, rows, restart_rows) if restart_rows else [0]
    for r in starts:  # each restart interval begins as the image does
        pred[r, 0] = 1 << (bits - 1)
        pred[r, 1:] = x[r, :-1]
    diff = (x - pred) & 0xFFFF
    diff = np.where(diff >= 0x8000, diff - 0x10000, diff)  # -32767..32768
    ssss = categories(diff)
    ssss[diff == -32768] = 16  # (never here: -32768 is 32768 mod 2^16)
    freq = np.bincount(ssss.ravel(), minlength=17)
    length = huffman_lengths(freq)
    order = sorted(length, key=lambda s: (length[s], s))
    code, codes, last = 0, {}, 0
    for s in order:
        code <<= length[s] - last
        last = length[s]
        codes[s] = (code, length[s])
        code += 1
    out = bytearray(b"\xff\xd8")

    def segment(marker, body):
        out.extend(bytes([0xFF, marker]) + (len(body) + 2).to_bytes(2, "big") + body)

    segment(0xC3, bytes([bits]) + rows.to_bytes(2, "big") + cols.to_bytes(2, "big") +
            bytes([1, 1, 0x11, 0]))
    counts = [sum(1 for s in length if length[s] == n) for n in range(1, 17)]
    segment(0xC4, bytes([0x00] + counts + order))
    if restart_rows:
        segment(0xDD, (restart_rows * cols).to_bytes(2, "big"))
    segment(0xDA, bytes([1, 1, 0x00, 1, 0, 0]))
    acc, nbits = 0, 0
    data = bytearray()

    def flush_bits():
        nonlocal acc, nbits
        while nbits >= 8:
            byte = (acc >> (nbits - 8)) & 0xFF
            data.append(byte)
            if byte == 0xFF:
                data.append(0)
            nbits -= 8
        acc &= (1 << nbits) - 1

    def pad():
        nonlocal acc, nbits
        if nbits % 8:
            fill = 8 - nbits % 8
            acc = (acc << fill) | ((1 << fill) - 1)
            nbits += fill
            flush_bits()

    d, s = diff.ravel(), ssss.ravel()
    interval = restart_rows * cols if restart_rows else 0
    marker = 0
    for i in range(d.size):
        if interval and i and i % interval == 0:
            pad()
            data.extend(bytes([0xFF, 0xD0 + marker]))
            marker = (marker + 1) % 8
        c, n = codes[s[i]]
        acc = (acc << n) | c
        nbits += n
        if 0 < s[i] < 16:
            v = d[i] if d[i] > 0 else d[i] + (1 << s[i]) - 1
            acc = (acc << s[i]) | int(v)
            nbits += int(s[i])
        flush_bits()
    pad()
    out.extend(data)
    out.extend(b"\xff\xd9")
    return bytes(out)




def check_with_dcmtk(path, expected):
    """Exits unless DCMTK's dcmdjpeg decodes the file at path to `expected` (frames, rows, cols)."""
    with tempfile.TemporaryDirectory() as work:
        back = os.path.join(work, "back.dcm")
        subprocess.run(["dcmdjpeg", path, back], check=True)
        got = pydicom.dcmread(back).pixel_array.reshape(expected.shape)
    if not np.array_equal(got.astype(np.int64), expected):
        raise SystemExit(f"sv1_encoder: {path}: the stream does not decode to its input")
