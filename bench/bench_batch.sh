#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_batch.sh: dicomhist equalize over a generated archive of CT series, end to end, against
# the floors (cp -r of the tree; DCMTK's dcmdjpeg decoding the JPEG lossless copy with two
# processes) and a pydicom + scikit-image script on two processes; --jobs 2 against --jobs 1;
# and peak memory for an archive ten times larger. Wall time and CPU time (user + system, of the
# command and its children) both: on a shared machine the wall time follows the load, the CPU
# time much less. Prints a Markdown table (for docs/performance.md) and keeps the raw timings in
# WORKDIR/results.tsv.
#
# Usage: bench/bench_batch.sh DICOMHIST WORKDIR
# Environment (defaults in brackets):
#   SERIES [12] SLICES [40] SIZE [512]   the archive: 12 x 40 x 512^2 x 2 bytes = 252 MB
#   JOBS ["1 2"]                         the --jobs values to time (the first is the baseline)
#   DEVICES ["cpu"]                      --device values to time ("cpu cuda" on a GPU machine)
#   SCALE [10]                           the larger archive, SCALE x SERIES series, for memory
#   MEM_SLICES [16]                      slices per series in the memory archives
#   REPEAT [3]                           runs per figure; the median is reported
# DCMTK's tools and the Python reference run only where present (dcmcjpeg makes the JPEG
# lossless copy; without it that half is skipped), so the dicomhist figures need nothing but
# Python with numpy and pydicom for the generator. On the GPU machine:
#   JOBS="1 16" DEVICES="cpu cuda" bench/bench_batch.sh build/dicomhist /tmp/bench-batch
#
# The device table (issue 24), instead of all the above, when KINDS is set:
#   KINDS ["uncompressed j2k htj2k jpll"]  archives made by bench/batch_archives.py (SERIES x
#                                  SLICES x SIZE^2 CT slices, then encoded copies of them by
#                                  opj_compress, ojph_compress and dcmcjpeg on every core)
#   DEVICES ["cpu cuda auto"], JOBS [16]: each archive equalized with each --device at that
#   --jobs, REPEAT times (the devices interleaved run by run), with --stats: the workers' time
#   split into read, decode, compute and write per device, printed beside the table. Every device's outputs are compared with the
#   first one's, pixel for pixel (bench/batch_compare.py), before any figure is printed.
#   SERIES=52 SLICES=40 KINDS="uncompressed j2k htj2k jpll" REPEAT=1 \
#       bench/bench_batch.sh build/dicomhist /tmp/bench-batch     (2080 slices, 1.09 GB)
set -euo pipefail

DICOMHIST=$(readlink -f "${1:?usage: bench_batch.sh DICOMHIST WORKDIR}")
WORK=${2:?usage: bench_batch.sh DICOMHIST WORKDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SERIES=${SERIES:-12} SLICES=${SLICES:-40} SIZE=${SIZE:-512}
JOBS=${JOBS:-"1 2"} DEVICES=${DEVICES:-cpu} SCALE=${SCALE:-10} MEM_SLICES=${MEM_SLICES:-16}
REPEAT=${REPEAT:-3}
export SOURCE_DATE_EPOCH=1700000000
mkdir -p "$WORK"
RESULTS="$WORK/results.tsv"
: > "$RESULTS"

make_archive() { # DIR STUDIES SLICES; made beside and renamed, so a killed run leaves no half
    [ -d "$1/EXPORT" ] && return
    rm -rf "$1.partial"
    python3 "$HERE/../tests/cli/archive_maker.py" "$1.partial" "$2" "$3" "$SIZE" CT >/dev/null
    mkdir -p "$1"
    mv "$1.partial/EXPORT" "$1/EXPORT"
    rmdir "$1.partial"
}

# Runs a command REPEAT times with OUT removed before each; records the median wall time and
# the largest peak RSS. Usage: measure NAME BYTES OUT COMMAND...
measure() {
    local name=$1 bytes=$2 out=$3
    shift 3
    local times=() cpus=() rss=0
    for _ in $(seq "$REPEAT"); do
        rm -rf "$out"
        sync
        local log
        log=$(mktemp)
        /usr/bin/time -f "%e %M %U %S" -o "$log" "$@" >/dev/null 2>"$WORK/last.err" ||
            { echo "bench_batch: $name failed:" >&2; tail -5 "$WORK/last.err" >&2; rm -f "$log"; return 1; }
        read -r t m u k < <(tail -1 "$log")
        rm -f "$log"
        times+=("$t")
        cpus+=("$(calc "$u + $k")")
        [ "$m" -gt "$rss" ] && rss=$m
    done
    local median cpu
    median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (REPEAT + 1) / 2 ))p")
    cpu=$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "$(( (REPEAT + 1) / 2 ))p")
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$median" "$rss" "$bytes" "$cpu" >> "$RESULTS"
    printf '%-44s %8.2f s %9.1f MB/s %8.2f CPU s %8.1f MB peak\n' "$name" "$median" \
        "$(calc "$bytes / $median / 1000000")" "$cpu" "$(calc "$rss / 1024")" >&2
}

tree_bytes() { du -sb "$1" | cut -f1; }

# The device table: every archive of KINDS with every device of DEVICES at --jobs JOBS.
device_table() {
    local jobs=${JOBS:-16} devices=${DEVICES_TABLE:-"cpu cuda auto"} kinds=() k d
    [ "$DEVICES" != cpu ] && devices=$DEVICES
    for k in $KINDS; do [ "$k" != uncompressed ] && kinds+=("$k"); done
    local t0=$SECONDS
    python3 "$HERE/batch_archives.py" "$WORK" "$SERIES" "$SLICES" "$SIZE" "${kinds[@]}"
    echo "bench_batch: archives made in $((SECONDS - t0)) s" >&2
    local pixels=$(( $(find "$WORK/uncompressed/EXPORT" -type f | wc -l) * SIZE * SIZE * 2 ))
    local table="$WORK/device-table.md" stats="$WORK/device-stats.txt"
    : > "$table"
    : > "$stats"
    for k in $KINDS; do
        # Repetitions interleave the devices (cpu, cuda, auto, cpu, ...): each run deletes and
        # writes an archive's worth of files, and the file system's background work grows run
        # after run (session 16, run 77: the third device's write stage 11 -> 17 s over its three
        # runs in a row), so a device's runs back to back would pay for the ones before them.
        local -A times_of=() cpus_of=()
        local r
        for r in $(seq "$REPEAT"); do
            for d in $devices; do
                local out="$WORK/out-$k-$d" log
                rm -rf "$out"
                sync
                log=$(mktemp)
                local s0 c0 s1 c1
                s0=$(date +%s.%N)
                times >"$WORK/times.txt"
                c0=$(children_cpu "$WORK/times.txt")
                "$DICOMHIST" equalize --jobs "$jobs" --device "$d" --stats -o "$out" \
                    "$WORK/$k/EXPORT" >/dev/null 2>"$log" ||
                    { echo "bench_batch: $k $d failed:" >&2; tail -5 "$log" >&2; return 1; }
                s1=$(date +%s.%N)
                times >"$WORK/times.txt"
                c1=$(children_cpu "$WORK/times.txt")
                times_of[$d]+="$(calc "$s1 - $s0") "
                cpus_of[$d]+="$(calc "$c1 - $c0") "
                { echo "## $k, --device $d, --jobs $jobs, run $r"; grep 'stats:\|decoder' "$log"; } >> "$stats"
                rm -f "$log"
            done
        done
        local first=""
        for d in $devices; do
            local out="$WORK/out-$k-$d" t c
            t=$(printf '%s\n' ${times_of[$d]} | sort -g | sed -n "$(( (REPEAT + 1) / 2 ))p")
            c=$(printf '%s\n' ${cpus_of[$d]} | sort -g | sed -n "$(( (REPEAT + 1) / 2 ))p")
            printf '%s\t%s\t%s\t%s\t%s\n' "$k" "$d" "$t" "$c" \
                "$(grep -o '"decoder":"[^"]*"' "$out/dicomhist-manifest.jsonl" | sort | uniq -c |
                   sort -rn | head -1 | sed 's/.*"decoder":"\([^"]*\)"/\1/')" >> "$table"
            printf 'bench_batch: %-13s --device %-4s %7.2f s %8.1f MB/s %8.2f CPU s\n' "$k" "$d" \
                "$t" "$(calc "$pixels / $t / 1000000")" "$c" >&2
            if [ -z "$first" ]; then
                first=$out
            else # the same pixels whatever the device, or no figure
                python3 "$HERE/batch_compare.py" "$first" "$out"
                rm -rf "$out"
            fi
        done
        rm -rf "$first"
    done
    echo
    echo "| archive | device | seconds | MB/s of pixels | CPU seconds | decoder | vs cpu | vs the faster of cpu, cuda |"
    echo "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |"
    while IFS=$'\t' read -r k d t c dec; do
        local cpu_t cuda_t best
        cpu_t=$(awk -F'\t' -v k="$k" '$1 == k && $2 == "cpu" {print $3}' "$table")
        cuda_t=$(awk -F'\t' -v k="$k" '$1 == k && $2 == "cuda" {print $3}' "$table")
        best=$(awk -v a="${cpu_t:-0}" -v b="${cuda_t:-0}" \
            'BEGIN { print (a > 0 && b > 0) ? (a < b ? a : b) : 0 }')
        printf '| %s | %s | %.2f | %.0f | %.2f | %s | %s | %s |\n' "$k" "$d" "$t" \
            "$(calc "$pixels / $t / 1000000")" "$c" "$dec" \
            "$([ -n "$cpu_t" ] && calc "$cpu_t / $t" | xargs printf '%.2fx' || echo -)" \
            "$([ "$best" != 0 ] && calc "$best / $t" | xargs printf '%.2fx' || echo -)"
    done < "$table"
    echo
    echo "$(( pixels / 1000000 )) MB of pixels per archive ($SERIES series of $SLICES ${SIZE}x${SIZE}"\
         "slices); files: $(for k in $KINDS; do printf '%s %s MB; ' "$k" \
         "$(( $(tree_bytes "$WORK/$k/EXPORT") / 1000000 ))"; done)"
    echo
    echo "Stage split (--stats; stages summed over the worker threads):"
    echo '```'
    cat "$stats"
    echo '```'
}

# User + system CPU seconds of the shell's finished children, from what `times` wrote into $1
# (run in the shell itself: in a command substitution it would count the subshell's children).
children_cpu() {
    tail -1 "$1" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]);
                       n += p[1] * 60 + p[2] } print n }'
}
calc() { awk "BEGIN { print $1 }"; } # no bc on every machine

echo "bench_batch: machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')" >&2
[ -n "${KINDS:-}" ] && { device_table; exit; }
U="$WORK/uncompressed"
make_archive "$U" "$SERIES" "$SLICES"
UB=$(tree_bytes "$U/EXPORT")
PIXELS=$(( $(find "$U/EXPORT" -type f | wc -l) * SIZE * SIZE * 2 ))

J="$WORK/jpeg-lossless"
if command -v dcmcjpeg >/dev/null && [ ! -d "$J/EXPORT" ]; then
    rm -rf "$J.partial"
    (cd "$U" && find EXPORT -type d) | while read -r d; do mkdir -p "$J.partial/$d"; done
    (cd "$U" && find EXPORT -type f) |
        xargs -P "$(nproc)" -I{} dcmcjpeg --encode-lossless-sv1 "$U/{}" "$J.partial/{}"
    mv "$J.partial" "$J"
fi

measure "cp -r, uncompressed" "$UB" "$WORK/out-cp" cp -r "$U/EXPORT" "$WORK/out-cp"
for device in $DEVICES; do
    for jobs in $JOBS; do
        measure "dicomhist equalize --jobs $jobs --device $device, uncompressed" "$PIXELS" \
            "$WORK/out-u" "$DICOMHIST" equalize --jobs "$jobs" --device "$device" \
            -o "$WORK/out-u" "$U/EXPORT"
    done
done
if [ -d "$J/EXPORT" ]; then
    if command -v dcmdjpeg >/dev/null; then
        decode_all() { # the floor: DCMTK's decoder alone, two processes, one file each call
            (cd "$J" && find EXPORT -type d) | while read -r d; do mkdir -p "$WORK/out-dj/$d"; done
            (cd "$J" && find EXPORT -type f) | xargs -P 2 -I{} dcmdjpeg "$J/{}" "$WORK/out-dj/{}"
        }
        export -f decode_all
        export J WORK
        measure "dcmdjpeg, 2 processes, JPEG lossless" "$PIXELS" "$WORK/out-dj" bash -c decode_all
    fi
    for device in $DEVICES; do
        for jobs in $JOBS; do
            measure "dicomhist equalize --jobs $jobs --device $device, JPEG lossless" "$PIXELS" \
                "$WORK/out-j" "$DICOMHIST" equalize --jobs "$jobs" --device "$device" \
                -o "$WORK/out-j" "$J/EXPORT"
        done
    done
fi
if python3 -c 'import skimage, pydicom' 2>/dev/null; then
    measure "pydicom + scikit-image, 2 processes, uncompressed" "$PIXELS" "$WORK/out-py" \
        python3 "$HERE/batch_reference.py" "$U/EXPORT" "$WORK/out-py" 2
    if [ -d "$J/EXPORT" ] && python3 -c 'import pylibjpeg, libjpeg' 2>/dev/null; then
        measure "pydicom + scikit-image, 2 processes, JPEG lossless" "$PIXELS" "$WORK/out-pyj" \
            python3 "$HERE/batch_reference.py" "$J/EXPORT" "$WORK/out-pyj" 2
    fi
fi

# Memory: the same series, SCALE times as many of them.
M1="$WORK/mem-1x" M10="$WORK/mem-${SCALE}x"
make_archive "$M1" "$SERIES" "$MEM_SLICES"
make_archive "$M10" $(( SERIES * SCALE )) "$MEM_SLICES"
last_jobs=${JOBS##* }
for tree in "$M1" "$M10"; do
    measure "dicomhist --jobs $last_jobs, $(basename "$tree") ($(du -sh "$tree/EXPORT" | cut -f1))" \
        "$(tree_bytes "$tree/EXPORT")" "$WORK/out-mem" "$DICOMHIST" equalize --jobs "$last_jobs" \
        --device "${DEVICES%% *}" -o "$WORK/out-mem" "$tree/EXPORT"
done
rm -rf "$WORK"/out-*

echo
echo "| run | seconds | MB/s | CPU seconds | MB per CPU second | peak MB |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
while IFS=$'\t' read -r name t m bytes cpu; do
    printf '| %s | %.2f | %.1f | %.2f | %.1f | %.0f |\n' "$name" "$t" \
        "$(calc "$bytes / $t / 1000000")" "$cpu" "$(calc "$bytes / ($cpu + 0.001) / 1000000")" \
        "$(calc "$m / 1024")"
done < "$RESULTS"
echo
echo "MB/s: decoded pixel bytes per second ($(( PIXELS / 1000000 )) MB of pixels; files"\
     "$(( UB / 1000000 )) MB uncompressed$([ -d "$J/EXPORT" ] && echo ", $(( $(tree_bytes "$J/EXPORT") / 1000000 )) MB JPEG lossless")),"\
     "except cp -r and the memory runs: file bytes."
