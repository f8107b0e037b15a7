# SPDX-License-Identifier: MIT
"""Every real file of ../shared/dicom (MANIFEST.tsv) through the package and through the
command: the same metadata (info --json), the same histogram, and for the files the command
refuses, an exception of the same status naming the file."""
import json
import os
import subprocess

import numpy as np
import pytest

import dicomhist
from conftest import SHARED

_STATUS = {"DH_ERR_MALFORMED", "DH_ERR_UNSUPPORTED", "DH_ERR_IO", "DH_ERR_MISMATCH"}


def manifest_inputs():
    path = os.path.join(SHARED, "MANIFEST.tsv")
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        rows = [line.split("\t")[0] for line in f.read().splitlines()[1:] if line.strip()]
    inputs = []
    for rel in rows:  # a series is read as its folder
        rel = os.path.dirname(rel) if rel.startswith("series/") else rel
        if rel not in inputs:
            inputs.append(rel)
    return inputs


def test_every_real_file_like_the_command(cli):
    inputs = manifest_inputs()
    if not inputs:
        pytest.skip(f"{SHARED} (../shared/dicom) is absent")
    checked = refused = 0
    for rel in inputs:
        path = os.path.join(SHARED, rel)
        run = subprocess.run([cli.binary, "info", "--json", path], capture_output=True, text=True)
        if run.returncode != 0:  # the command refuses it: so does the package, by status
            with pytest.raises(dicomhist.DicomhistError) as info:
                dicomhist.read(path)
            assert info.value.status in _STATUS, rel
            assert os.path.basename(path) in info.value.message, rel
            refused += 1
            continue
        want = [json.loads(line) for line in run.stdout.splitlines()]
        vols = dicomhist.read_all(path)
        assert [v.info() for v in vols] == want, rel
        hist = cli("histogram", "--json", "--bins", "64", path)
        for vol, h in zip(vols, hist):
            counts, edges = dicomhist.histogram(vol, bins=64)
            assert counts.tolist() == h["counts"], rel
            assert [edges[0], edges[-1]] == h["range"], rel
            assert vol.pixels.shape == (vol.slices, vol.rows, vol.columns)
            assert vol.pixels.min() == vol.stored_min and vol.pixels.max() == vol.stored_max
        checked += 1
    print(f"{checked} inputs read like the command, {refused} refused like it")
    assert checked >= 10 and refused >= 3, (checked, refused)
    np.testing.assert_equal(checked + refused, len(inputs))
