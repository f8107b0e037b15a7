#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_corpus.py: regenerates tests/fuzz/corpus, the small inputs that fuzz_corpus_replay feeds
to the fuzz target in every build. All come from the project's own sample_data (cropped to 8x8
so that each stays near 1 KB) or are built here byte by byte: one per transfer syntax, an
enhanced multi-frame file, and the inputs that once cost a huge allocation (a PixelData length
far beyond the data, plain and deflated). JPEG 2000 seeds come from OpenJPEG's opj_compress,
HTJ2K ones from OpenJPH's ojph_compress. Needs pydicom, numpy, DCMTK's dcmcrle, dcmcjpeg,
dcmcjpls, opj_compress and ojph_compress. Usage: make_corpus.py SAMPLE_DATA_DIR OUT_DIR
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import pydicom

sample, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)


def crop(src, dst):
    ds = pydicom.dcmread(src)
    arr = np.ascontiguousarray(ds.pixel_array[:8, :8])
    ds.Rows, ds.Columns = arr.shape
    big = ds.file_meta.TransferSyntaxUID == "1.2.840.10008.1.2.2"
    ds.PixelData = arr.astype(arr.dtype.newbyteorder(">" if big else "<")).tobytes()
    ds.save_as(dst)


def code_stream(values, tool, tmp, signed=False):
    """A lossless code stream of a 2-D array of stored values: J2K from opj_compress (a signed
    stream when `signed`), HTJ2K from ojph_compress (unsigned: the values' 12-bit pattern)."""
    h, w = values.shape
    out = os.path.join(tmp, "cs.j2c" if tool == "ojph_compress" else "cs.j2k")
    if tool == "ojph_compress":
        src = os.path.join(tmp, "in.pgm")
        with open(src, "wb") as f:
            f.write(b"P5\n%d %d\n4095\n" % (w, h))
            f.write((values.astype(np.int64) & 0xFFF).astype(">u2").tobytes())
        args = ["-reversible", "true", "-num_decomps", "2"]
    else:
        src = os.path.join(tmp, "in.rawl")
        values.astype("<i2" if signed else "<u2").tofile(src)
        args = ["-F", "%d,%d,1,12,%s" % (w, h, "s" if signed else "u"), "-n", "3"]
    subprocess.run([tool, "-i", src, "-o", out] + args, check=True, stdout=subprocess.DEVNULL)
    return open(out, "rb").read()


def encapsulated(src, streams, ts, dst, signed=False):
    """The file src with its pixels replaced by one fragment per code stream (a basic offset
    table when there are several frames)."""
    from pydicom.encaps import encapsulate
    ds = pydicom.dcmread(src)
    if len(streams) > 1:
        ds.NumberOfFrames = len(streams)
    ds.PixelRepresentation = 1 if signed else 0
    ds.PixelData = encapsulate(streams, has_bot=len(streams) > 1)
    ds["PixelData"].VR = "OB"
    ds["PixelData"].is_undefined_length = True
    ds.file_meta.TransferSyntaxUID = ts
    ds.save_as(dst)
    return open(dst, "rb").read()


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def el(g, e, vr, val):
    if vr in ("OB", "OW", "SQ", "UN", "UT"):
        return struct.pack("<HH2sHI", g, e, vr.encode(), 0, len(val)) + val
    return struct.pack("<HH2sH", g, e, vr.encode(), len(val)) + val


def text(s, pad=b" "):
    s = s.encode()
    return s + (pad if len(s) % 2 else b"")


def file_start(ts):
    meta = (el(2, 1, "OB", b"\0\1") + el(2, 2, "UI", text("1.2.840.10008.5.1.4.1.1.2.1", b"\0"))
            + el(2, 3, "UI", text("1.2.3", b"\0")) + el(2, 0x10, "UI", text(ts, b"\0")))
    return b"\0" * 128 + b"DICM" + el(2, 0, "UL", struct.pack("<I", len(meta))) + meta


def us(e, v):
    return el(0x28, e, "US", struct.pack("<H", v))


def item(b):
    return struct.pack("<HHI", 0xFFFE, 0xE000, len(b)) + b


def enhanced(frames, garbled=None):
    """Enhanced CT, 1x1 8-bit frames whose positions fall as the frame number rises; frame
    `garbled` gets a position of two values instead of three."""
    ds = (el(8, 0x16, "UI", text("1.2.840.10008.5.1.4.1.1.2.1", b"\0")) + us(2, 1)
          + el(0x28, 4, "CS", text("MONOCHROME2")) + el(0x28, 8, "IS", text(str(frames)))
          + us(0x10, 1) + us(0x11, 1) + us(0x100, 8) + us(0x101, 8) + us(0x102, 7) + us(0x103, 0))
    shared = item(el(0x20, 0x9116, "SQ", item(el(0x20, 0x37, "DS", text("1\\0\\0\\0\\1\\0")))))
    ds += el(0x5200, 0x9229, "SQ", shared)
    per_frame = b"".join(
        item(el(0x20, 0x9113, "SQ", item(el(0x20, 0x32, "DS", text(
            "0\\%d" % i if i == garbled else "0\\0\\%d" % (frames - i))))))
        for i in range(frames))
    ds += el(0x5200, 0x9230, "SQ", per_frame)
    pixels = bytes(range(frames)) + (b"\0" if frames % 2 else b"")
    return file_start("1.2.840.10008.1.2.1") + ds + el(0x7FE0, 0x10, "OB", pixels)


def deflate_dataset(data):
    meta_end = 144 + struct.unpack("<I", data[140:144])[0]
    old_ts, new_ts = b"\x14\x001.2.840.10008.1.2.1\0", b"\x16\x001.2.840.10008.1.2.1.99"
    head = data[:meta_end].replace(old_ts, new_ts)
    assert len(head) == meta_end + 2, "no explicit little endian TransferSyntaxUID to replace"
    head = head[:140] + struct.pack("<I", meta_end - 144 + 2) + head[144:]
    z = zlib.compressobj(6, zlib.DEFLATED, -15)
    return head + z.compress(data[meta_end:]) + z.flush()


with tempfile.TemporaryDirectory() as tmp:
    ct = os.path.join(tmp, "ct.dcm")
    crop(os.path.join(sample, "ct_phantom", "IM0001.dcm"), ct)
    write("ct_8x8_explicit_le.dcm", open(ct, "rb").read())
    for tool, args, name in [("dcmcrle", [], "rle"), ("dcmcjpeg", ["+el"], "jpeg_lossless"),
                             ("dcmcjpls", [], "jpeg_ls")]:
        dst = os.path.join(tmp, name)
        subprocess.run([tool] + args + [ct, dst], check=True)
        write("ct_8x8_%s.dcm" % name, open(dst, "rb").read())
    for suffix in ["", "_big_endian", "_implicit", "_deflated"]:
        dst = os.path.join(tmp, "x.dcm")
        crop(os.path.join(sample, "xray_projection%s.dcm" % suffix), dst)
        write("xray_8x8%s.dcm" % (suffix or "_explicit_le"), open(dst, "rb").read())
    plain = open(ct, "rb").read()
    # RLE with a geometry its fragment cannot fill: refused before decoding.
    rle = bytearray(open(os.path.join(tmp, "rle"), "rb").read())
    at = rle.find(struct.pack("<HH2sH", 0x28, 0x10, b"US", 2)) + 8
    rle[at:at + 2] = struct.pack("<H", 46341)
    rle[at + 10:at + 12] = struct.pack("<H", 46341)
    write("ct_rle_46341x46341_claimed.dcm", bytes(rle))
    # JPEG with a TEM marker (FF01) right after SOI: DCMTK 3.6.7's bit-depth scan loops forever.
    jpeg = bytearray(open(os.path.join(tmp, "jpeg_lossless"), "rb").read())
    at = jpeg.find(b"\xff\xd8\xff") + 2
    jpeg[at:at + 2] = b"\xff\x01"
    write("ct_jpeg_tem_marker_after_soi.dcm", bytes(jpeg))

    # JPEG 2000 (.90) and HTJ2K (.201): one frame, two frames with an offset table, signed, a
    # whole JP2 file where the code stream belongs, and a code stream cut short.
    values = pydicom.dcmread(ct).pixel_array
    j2k = code_stream(values, "opj_compress", tmp)
    dst = os.path.join(tmp, "j.dcm")
    write("ct_8x8_j2k.dcm", encapsulated(ct, [j2k], "1.2.840.10008.1.2.4.90", dst))
    write("ct_8x8_j2k_truncated.dcm",
          encapsulated(ct, [j2k[:len(j2k) * 2 // 3]], "1.2.840.10008.1.2.4.90", dst))
    signed = code_stream(values - 2048, "opj_compress", tmp, signed=True)
    write("ct_8x8_j2k_signed_2_frames.dcm",
          encapsulated(ct, [signed, signed], "1.2.840.10008.1.2.4.91", dst,
                       signed=True))
    ht = code_stream(values - 2048, "ojph_compress", tmp)
    write("ct_8x8_htj2k_signed.dcm",
          encapsulated(ct, [ht], "1.2.840.10008.1.2.4.201", dst, signed=True))
    write("ct_8x8_htj2k_2_frames.dcm",
          encapsulated(ct, [ht, code_stream(values, "ojph_compress", tmp)],
                       "1.2.840.10008.1.2.4.202", dst))
    jp2_src = os.path.join(tmp, "in.rawl")
    values.astype("<u2").tofile(jp2_src)
    subprocess.run(["opj_compress", "-i", jp2_src, "-o", os.path.join(tmp, "x.jp2"), "-F",
                    "8,8,1,12,u", "-n", "3"], check=True, stdout=subprocess.DEVNULL)
    write("ct_8x8_jp2_wrapped.dcm",
          encapsulated(ct, [open(os.path.join(tmp, "x.jp2"), "rb").read()],
                       "1.2.840.10008.1.2.4.90", dst))

write("enhanced_16_frames_descending.dcm", enhanced(16))
# A garbled per-frame position: the positions read so far once leaked.
write("enhanced_garbled_position_of_frame_5.dcm", enhanced(16, garbled=4))
# PixelData claims 4 GB and carries 128 bytes: once allocated in full before the read failed.
lying = bytearray(plain)
at = lying.rfind(struct.pack("<HH2sH", 0x7FE0, 0x10, b"OW", 0)) + 8
lying[at:at + 4] = struct.pack("<I", 0xFFFFFFF0)
write("pixel_length_beyond_data.dcm", bytes(lying))
write("pixel_length_beyond_data_deflated.dcm", deflate_dataset(bytes(lying)))
write("ct_8x8_deflated_by_hand.dcm", deflate_dataset(plain))
write("truncated_in_meta_header.dcm", plain[:200])
write("truncated_in_pixel_data.dcm", plain[:-40])
write("not_dicom.txt", b"hello, world\n")


def with_luts(src, dst, claimed_entries=None):
    """src with a Modality LUT Sequence (16 entries, or claiming `claimed_entries` while holding
    16) and a VOI LUT Sequence of two items, first mapped value SS."""
    from pydicom.dataset import Dataset
    from pydicom.sequence import Sequence
    ds = pydicom.dcmread(src)
    modality = Dataset()
    modality.LUTDescriptor = [claimed_entries or 16, 0, 16]
    modality.ModalityLUTType = "HU"
    modality.LUTData = [i * 300 for i in range(16)]
    modality["LUTData"].VR = "US"
    ds.ModalityLUTSequence = Sequence([modality])
    items = []
    for k in range(2):
        voi = Dataset()
        voi.LUTDescriptor = [8, -2, 8]
        voi["LUTDescriptor"].VR = "SS"
        voi.LUTExplanation = "VIEW %d" % k
        voi.LUTData = [(i * 37 + k) % 256 for i in range(8)]
        voi["LUTData"].VR = "US"
        items.append(voi)
    ds.VOILUTSequence = Sequence(items)
    ds.save_as(dst)


with tempfile.TemporaryDirectory() as tmp:
    x = os.path.join(tmp, "x.dcm")
    crop(os.path.join(sample, "xray_projection.dcm"), x)
    for name, claimed in [("xray_8x8_modality_and_voi_lut.dcm", None),
                          # LUTDescriptor claims 4096 entries over 16 values: refused unread
                          ("modality_lut_entries_beyond_data.dcm", 4096)]:
        dst = os.path.join(tmp, name)
        with_luts(x, dst, claimed)
        write(name, open(dst, "rb").read())
