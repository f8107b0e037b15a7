#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_equalize_host.sh: host end to end, DICOM series in -> derived series out, `dicomhist
# equalize --mode volume` against the same job in Python (bench/equalize_reference.py: pydicom +
# scikit-image equalize_hist + pydicom), on the same generated CT-like series, same machine.
# Each figure is the median wall time of RUNS whole-process runs (Python's imports included, as a
# user would pay them), every run into a fresh output folder; input files sit in the page cache
# (both tools read them once before timing). GB/s counts input pixel bytes (2 per sample).
#
# Usage: bench/bench_equalize_host.sh DICOMHIST [SLICES=64] [SIZE=512] [RUNS=3] [DEVICE=cpu]
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,9p "$0" >&2; exit 2; }
dicomhist=$1 slices=${2:-64} size=${3:-512} runs=${4:-3} device=${5:-cpu}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/dh-eqbench.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$here/make_ct_series.py" "$work/in" "$slices" "$size"
bytes=$((slices * size * size * 2))

# Seconds of one command, wall clock.
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$work/last.err" || { cat "$work/last.err" >&2; return 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

# Warm the page cache with one untimed run of each.
"$dicomhist" equalize --device "$device" -o "$work/warm-dh" "$work/in" >/dev/null
python3 "$here/equalize_reference.py" "$work/warm-py" "$work/in"/*.dcm 2>/dev/null

dh=() py=()
for r in $(seq "$runs"); do
  dh+=("$(seconds "$dicomhist" equalize --device "$device" -o "$work/dh$r" "$work/in")")
  py+=("$(seconds python3 "$here/equalize_reference.py" "$work/py$r" "$work/in"/*.dcm)")
  echo "run $r: dicomhist ${dh[-1]} s, python ${py[-1]} s ($(cat "$work/last.err"))" >&2
done
dh_s=$(median "${dh[@]}") py_s=$(median "${py[@]}")
echo "python's largest level difference to dicomhist (definitions differ, see the script):" \
  "$(python3 "$here/equalize_reference.py" --compare "$work/dh1/in" "$work/py1")" >&2

printf '%s x %sx%s 12-bit (%d MiB of pixels), %s cores, median of %s runs, device %s\n' \
  "$slices" "$size" "$size" $((bytes >> 20)) "$(nproc)" "$runs" "$device"
printf '| job | seconds | input GB/s |\n| --- | --- | --- |\n'
awk -v b="$bytes" -v d="$dh_s" -v p="$py_s" 'BEGIN {
  printf "| dicomhist equalize --mode volume | %.3f | %.3f |\n", d, b / d / 1e9
  printf "| pydicom + skimage equalize_hist + pydicom | %.3f | %.4f |\n", p, b / p / 1e9
  printf "dicomhist is %.1fx faster end to end\n", p / d }'
