# SPDX-License-Identifier: MIT
"""Mutual information against NumPy loops, scikit-learn, scikit-image and the command."""
import math
import os

import numpy as np
import pytest

import dicomhist
from conftest import (SAMPLE, ct_like, ref_bins, ref_float_bins, ref_joint, ref_scores,
                      shared)

SCORE_KEYS = ("mi", "nmi", "h_fixed", "h_moving", "h_joint")


def assert_scores(rec, want, rel=1e-12):
    assert int(rec["n"]) == want["n"]
    for k in SCORE_KEYS:
        assert float(rec[k]) == pytest.approx(want[k], rel=rel, abs=1e-14), k


@pytest.fixture
def pair():
    rng = np.random.default_rng(11)
    fixed = ct_like(rng, (45, 67)).astype(np.uint16)
    moving = np.clip(fixed.astype(np.int64) // 2 + rng.integers(-300, 300, fixed.shape) + 700,
                     0, 4095).astype(np.uint16)
    return fixed, moving


@pytest.mark.parametrize("bins", [2, 16, 50, (64, 32), 100, 256])
def test_integer_images_against_numpy_loops(pair, bins):
    fixed, moving = pair
    bf, bm = bins if isinstance(bins, tuple) else (bins, bins)
    rec = dicomhist.mi_scores(fixed, moving, bins=bins, device="cpu")
    fb = ref_bins(fixed, int(fixed.min()), int(fixed.max()), bf)
    mb = ref_bins(moving, int(moving.min()), int(moving.max()), bm)
    joint = ref_joint(fb, mb, bf, bm)
    assert_scores(rec, ref_scores(joint))
    assert (int(rec["moving_lo"]), int(rec["moving_hi"])) == (moving.min(), moving.max())
    counts, fedges, medges = dicomhist.joint_histogram(fixed, moving, bins=bins, device="cpu")
    np.testing.assert_array_equal(counts, joint)
    # the documented equivalent edges reproduce the counts through numpy.histogram2d
    h2, _, _ = np.histogram2d(fixed.reshape(-1), moving.reshape(-1), bins=[fedges, medges])
    np.testing.assert_array_equal(h2, joint)
    assert dicomhist.mutual_information(fixed, moving, bins=bins, device="cpu") == rec["mi"]


def test_scikit_learn_mutual_info_score(pair):
    metrics = pytest.importorskip("sklearn.metrics")
    fixed, moving = pair
    counts, _, _ = dicomhist.joint_histogram(fixed, moving, bins=64, range_fixed=(0, 4095),
                                             range_moving=(0, 4095))
    mi = dicomhist.mutual_information(fixed, moving, bins=64, range_fixed=(0, 4095),
                                      range_moving=(0, 4095))
    want = metrics.mutual_info_score(None, None, contingency=counts.astype(np.int64))
    assert mi == pytest.approx(want, rel=1e-12)
    # and from the labels themselves: the documented binning as class labels
    labels_f = ref_bins(fixed, 0, 4095, 64).reshape(-1)
    labels_m = ref_bins(moving, 0, 4095, 64).reshape(-1)
    assert mi == pytest.approx(metrics.mutual_info_score(labels_f, labels_m), rel=1e-12)


@pytest.mark.parametrize("kind", ["uint16", "float32", "float64", "int8", "constant", "3d"])
@pytest.mark.parametrize("bins", [100, 32, 256])
def test_scikit_image_nmi(kind, bins):
    skm = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(bins)
    a = ct_like(rng, (3, 40, 50) if kind == "3d" else (40, 50))
    b = np.roll(a, 3, axis=-1) * 0.7 + rng.normal(0, 30, a.shape)
    if kind in ("uint16", "3d"):
        a, b = a.astype(np.uint16), np.clip(b, 0, None).astype(np.uint16)
    elif kind == "float32":
        a, b = (a / 4095).astype(np.float32), (b / 4095).astype(np.float32)
    elif kind == "int8":
        a, b = (a // 40 - 50).astype(np.int8), (b // 40 - 50).astype(np.int8)
    elif kind == "constant":
        a = np.full_like(a, 7.0)
    want = skm.normalized_mutual_information(a, b, bins=bins)
    assert dicomhist.normalized_mutual_information(a, b, bins=bins) == pytest.approx(want,
                                                                                      rel=1e-12)


def test_scikit_image_nmi_real_radiograph():
    skm = pytest.importorskip("skimage.metrics")
    img = dicomhist.read(os.path.join(SAMPLE, "xray_projection.dcm")).pixels[0]
    for shift in (0, 1, 5):
        moved = np.roll(img, shift, axis=0)
        want = skm.normalized_mutual_information(img, moved)
        assert dicomhist.normalized_mutual_information(img, moved) == pytest.approx(want,
                                                                                    rel=1e-12)
    with pytest.raises(ValueError):
        dicomhist.normalized_mutual_information(img, img[np.newaxis])


def test_batches_equal_one_by_one(pair):
    fixed, moving = pair
    rng = np.random.default_rng(2)
    batch = np.stack([np.roll(moving, k, axis=1) for k in range(11)])
    valid = rng.random(batch.shape) > 0.2
    f = dicomhist.MIFixed(fixed, fixed > 100, bins=(32, 48), device="cpu", max_batch=4)
    whole = f.scores(batch, valid)
    assert whole.shape == (11,) and whole.dtype == dicomhist.SCORE_DTYPE
    for k in range(11):
        one = f.scores(batch[k], valid[k])
        assert one.tobytes() == whole[k].tobytes()
        inside = fixed[fixed > 100]
        assert (f.info["fixed_lo"], f.info["fixed_hi"]) == (inside.min(), inside.max())
        fb = np.where(fixed > 100, ref_bins(fixed, int(inside.min()), int(inside.max()), 32), -1)
        m = batch[k][valid[k]]
        mb = np.where(valid[k], ref_bins(batch[k], int(m.min()), int(m.max()), 48), -1)
        assert_scores(one, ref_scores(ref_joint(fb, mb, 32, 48)))
    # the last library call's joint histograms are kept
    f.scores(batch, valid)
    counts = f.joint_histogram(10)
    assert counts.sum() == whole[10]["n"]
    with pytest.raises(ValueError, match="earlier library call"):
        f.joint_histogram(0)


def test_float32_equals_integer_path_on_integer_values(pair):
    fixed, moving = pair
    batch = np.stack([moving, np.roll(moving, 7, axis=0)])
    ints = dicomhist.mi_scores(fixed, batch, bins=(64, 50), range_fixed=(100, 3999),
                               range_moving=(0, 2999), device="cpu")
    floats = dicomhist.mi_scores(fixed.astype(np.float32), batch.astype(np.float32),
                                 bins=(64, 50), range_fixed=(100.0, 4000.0),
                                 range_moving=(0.0, 3000.0), device="cpu")
    for a, b in zip(ints, floats):
        for k in SCORE_KEYS + ("ecc", "n", "status"):
            assert a[k].tobytes() == b[k].tobytes(), k


def test_float32_binning_against_numpy_float32(pair):
    fixed, _ = pair
    rng = np.random.default_rng(9)
    drr = rng.random(fixed.shape).astype(np.float32) * np.float32(1.2) - np.float32(0.1)
    drr[0, :6] = [np.nan, np.inf, -np.inf, 1.0, 0.0, np.float32(0.5)]
    bins = 37
    rec = dicomhist.mi_scores(fixed, drr, bins=bins, range_moving=(0.0, 1.0), device="cpu")
    fb = ref_bins(fixed, int(fixed.min()), int(fixed.max()), bins)
    mb = ref_float_bins(drr, 0.0, 1.0, bins)
    joint = ref_joint(fb, mb, bins, bins)
    counts, _, medges = dicomhist.joint_histogram(fixed, drr, bins=bins, range_moving=(0.0, 1.0),
                                                  device="cpu")
    np.testing.assert_array_equal(counts, joint)
    assert_scores(rec, ref_scores(joint))
    assert medges[0] == 0.0 and medges[-1] == 1.0
    assert int(rec["n"]) < drr.size  # NaN, infinities and out-of-range pixels left out


def test_masks_log2_and_degenerate(pair):
    fixed, moving = pair
    nats = dicomhist.mi_scores(fixed, moving, device="cpu")
    bits = dicomhist.mi_scores(fixed, moving, log2=True, device="cpu")
    assert bits["mi"] == pytest.approx(nats["mi"] / math.log(2), rel=1e-12)
    assert bits["nmi"] == pytest.approx(nats["nmi"], rel=1e-12)
    none = dicomhist.mi_scores(fixed, moving, mask=np.zeros(fixed.shape, bool), device="cpu")
    assert none["status"] & dicomhist.EMPTY and none["n"] == 0 and math.isnan(none["mi"])
    const = dicomhist.mi_scores(fixed, np.full_like(moving, 9), device="cpu")
    assert const["mi"] == 0.0 and const["status"] & dicomhist.ZERO_JOINT_ENTROPY == 0
    same = dicomhist.mi_scores(fixed, fixed, device="cpu")
    assert same["mi"] == pytest.approx(same["h_fixed"], rel=1e-12)


def test_against_the_command(cli, tmp_path):
    path = shared("pydicom_CT_small.dcm")
    fixed = dicomhist.read(path).pixels[0]
    for args, kw in ((["--bins", "64"], {}),
                     (["--bins", "32:100", "--range-fixed", "-1000:1500", "--log2"],
                      {"bins": (32, 100), "range_fixed": (-1000, 1500), "log2": True})):
        want = cli("mi", "--json", *args, path, path)[0]
        got = dicomhist.mi_scores(fixed, fixed, **kw)
        for k in ("mi", "nmi", "ecc", "h_fixed", "h_moving", "h_joint", "n"):
            assert float(got[k]) == pytest.approx(want[k], rel=1e-15), k


def test_errors(pair):
    fixed, moving = pair
    with pytest.raises(dicomhist.InvalidArgumentError) as info:
        dicomhist.MIFixed(fixed, bins=1)
    assert info.value.status == "DH_ERR_INVALID_ARGUMENT" and "bins" in info.value.message
    with pytest.raises(dicomhist.InvalidArgumentError):
        dicomhist.MIFixed(fixed, bins=257)
    f = dicomhist.MIFixed(fixed, device="cpu")
    with pytest.raises(dicomhist.InvalidArgumentError, match="moving_lo_f32"):
        f.scores(moving.astype(np.float32))
    with pytest.raises(ValueError, match="pixels"):
        f.scores(moving[:10])
    with pytest.raises(ValueError, match="not an integer range"):
        dicomhist.MIFixed(fixed, range_moving=(0.5, 99.5), device="cpu").scores(moving)
    with pytest.raises(ValueError, match="16 bits"):
        f.scores(moving.astype(np.int64) + 70000)
    with pytest.raises(ValueError, match="finite"):
        dicomhist.mutual_information(fixed, np.full(fixed.shape, np.nan, np.float32))
    with pytest.raises(dicomhist.InvalidArgumentError, match="float32"):
        dicomhist.MIFixed(fixed.astype(np.float32), range_fixed=(1.0, 1.0))
    if not dicomhist.cuda_available():
        with pytest.raises(dicomhist.NoDeviceError):
            dicomhist.MIFixed(fixed, device="cuda")
