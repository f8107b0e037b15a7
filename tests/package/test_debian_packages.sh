#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_debian_packages.sh: the Debian packages, end to end, on this machine (ctest label
# `package`, normal build only; docs/packaging.md):
#   1. tools/build-debs builds them in WORK/build (incremental on a rerun);
#   2. lintian: no error, and no warning outside the accepted ones (ACCEPTED below, argued in
#      docs/packaging.md);
#   3. apt-get install ./*.deb; the installed dicomhist runs on sample_data/, a C program builds
#      against libdicomhist-dev and runs;
#   4. Debian's Orthanc, started with a copy of /etc/orthanc (HTTP on a free port, DICOM server
#      off, storage in a temporary folder) loads the installed plugin from
#      /usr/share/orthanc/plugins and answers /dicomhist/status and a route on a stored sample;
#      then again with the commented AutoEqualize example of /etc/orthanc/dicomhist.json taken
#      in (the plugin must accept it as written);
#   5. apt-get purge: no package, file or configuration file of theirs is left, nor any package
#      apt pulled in for them.
# It changes the system's packages, so it restores them whatever happens (a trap; a marker file in
# WORK makes the next run clean up after a run that was killed), and refuses (skip, 77) to touch a
# dicomhist installed by anyone else. Skipped (77) where not root, or dpkg-dev, lintian, apt-get,
# Orthanc or Orthanc's SDK are absent.
# Usage: test_debian_packages.sh SOURCE_DIR WORK_DIR
set -euo pipefail

src="$(realpath "$1")"
work="$(realpath -m "$2")"
packages=(libdicomhist0 libdicomhist-dev dicomhist orthanc-dicomhist)
# lintian warnings accepted (docs/packaging.md, "lintian"); any other warning or error fails.
ACCEPTED=(maintscript-calls-ldconfig)

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "installs packages: must run as root"
for tool in dpkg dpkg-query dpkg-shlibdeps lintian apt-get python3 cc; do
    command -v "$tool" >/dev/null || skip "$tool not found (tools/install-deps installs it)"
done
if [ ! -x /usr/sbin/Orthanc ] || [ ! -f /etc/orthanc/orthanc.json ]; then
    skip "Debian's orthanc is not installed"
fi
[ -f /usr/include/orthanc/OrthancCPlugin.h ] || skip "orthanc-dev is absent: no plugin package"

mkdir -p "$work"
marker="$work/installed-by-test"
installed() { # the packages of ours dpkg knows in any state (installed, or configuration left)
    local p
    for p in "${packages[@]}"; do
        { dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "$p" 2>/dev/null || true; } |
            awk '$1 != "un" && $1 != "pn" { print $2 }'
    done
}
purge() { # packages...
    [ "$#" -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "$@" >"$work/purge.log" 2>&1 ||
        { cat "$work/purge.log" >&2; return 1; }
}
if [ -e "$marker" ]; then
    echo "a previous run was stopped before it cleaned up: purging what it installed"
    # shellcheck disable=SC2046 # one package per word
    purge $(installed) $(cat "$marker")
    rm -f "$marker"
fi
present="$(installed)"
[ -z "$present" ] || skip "already installed, and the test would remove them: $present"
for f in /usr/bin/dicomhist /usr/include/dicomhist.h /usr/lib/*/libdicomhist.so* \
         /usr/lib/orthanc/libOrthancDicomhist.so /usr/share/orthanc/plugins/libOrthancDicomhist.so \
         /etc/orthanc/dicomhist.json; do
    [ ! -e "$f" ] || skip "$f exists, installed outside dpkg: the packages would replace it"
done

tmp="$(mktemp -d /tmp/dicomhist-deb.XXXXXX)"
orthanc_pid=""
cleanup() {
    local status=$?
    [ -z "$orthanc_pid" ] || stop_orthanc
    if [ -e "$marker" ]; then
        echo "cleaning up: purging the packages"
        # shellcheck disable=SC2046
        purge $(installed) $(cat "$marker") || status=1
        rm -f "$marker"
    fi
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---------------------------------------------------------------- 1. build
echo "=== building the packages (tools/build-debs) (${SECONDS}s)"
"$src/tools/build-debs" "$work/build"
debs="$tmp/debs"
mkdir -p "$debs"
cp "$work"/build/*.deb "$debs/"
chmod 755 "$tmp" "$debs" # apt reads local packages as _apt
for p in "${packages[@]}"; do
    ls "$debs/${p}"_*.deb >/dev/null 2>&1 || fail "no package $p was built"
done

# ---------------------------------------------------------------- 2. lintian
echo "=== lintian (${SECONDS}s)"
# Exit status 2: tags at error level (judged below); anything else non-zero: lintian failed.
lintian_status=0
lintian --pedantic "$debs"/*.deb >"$tmp/lintian.txt" 2>&1 || lintian_status=$?
cat "$tmp/lintian.txt"
[ "$lintian_status" -eq 0 ] || [ "$lintian_status" -eq 2 ] || fail "lintian failed ($lintian_status)"
# Every error, and every warning whose tag (third field: "W: package: tag ...") is not accepted.
unexpected="$(awk -v accepted="${ACCEPTED[*]}" '
    BEGIN { n = split(accepted, a, " "); for (i = 1; i <= n; i++) ok[a[i]] = 1 }
    /^E: / || (/^W: / && !($3 in ok))' "$tmp/lintian.txt")"
[ -z "$unexpected" ] || fail "lintian: errors or warnings not accepted in docs/packaging.md:
$unexpected"
echo "lintian: no error, accepted warnings only"

# ---------------------------------------------------------------- 3. install, the command, the library
echo "=== apt-get install ./*.deb (${SECONDS}s)"
# What apt will install: ours and the dependencies it pulls in for them, removed at the end.
(cd "$debs" && apt-get install -s -q --no-install-recommends ./*.deb) |
    awk '/^Inst /{ print $2 }' >"$tmp/to-install"
cp "$tmp/to-install" "$marker"
(cd "$debs" && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    ./*.deb) >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "apt-get install"; }
echo "installed: $(tr '\n' ' ' <"$marker")"
for p in "${packages[@]}"; do
    [ "$(dpkg-query -W -f '${db:Status-Abbrev}' "$p")" = "ii " ] || fail "$p is not installed"
done

command -v dicomhist | grep -qx /usr/bin/dicomhist || fail "dicomhist is not /usr/bin/dicomhist"
info="$(cd "$src" && dicomhist info sample_data/ct_phantom)"
echo "$info"
grep -q '64 x 64 x 24' <<<"$info" || fail "dicomhist info: not the sample CT's geometry"
hist="$(cd "$src" && dicomhist histogram --json --bins 16 sample_data/xray_projection_jpeg_ls.dcm)"
echo "$hist"
grep -q '"total":65536' <<<"$hist" || fail "dicomhist histogram: not 65536 values"

cat >"$tmp/consumer.c" <<'EOF'
#include <dicomhist.h>
#include <stdio.h>
int main(void) { puts(dh_version_string()); return 0; }
EOF
cc -o "$tmp/consumer" "$tmp/consumer.c" -ldicomhist || fail "cannot build against libdicomhist-dev"
version="$(dpkg-query -W -f '${Version}' libdicomhist0)"
[ "$("$tmp/consumer")" = "$version" ] || fail "the library says $("$tmp/consumer"), the package $version"
echo "a C program built with -ldicomhist prints $version"

# ---------------------------------------------------------------- 4. Debian's Orthanc
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
http() { # PATH [FILE to POST]: the answer's body; fails on an HTTP error
    python3 - "$port" "$@" <<'EOF'
import sys, urllib.request
port, path = sys.argv[1], sys.argv[2]
data = open(sys.argv[3], "rb").read() if len(sys.argv) > 3 else None
with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", data=data, timeout=30) as r:
    sys.stdout.write(r.read().decode())
EOF
}
json_get() { # KEY...: the value at these keys of the JSON object on stdin
    python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]:
    v = v[k]
print(v if isinstance(v, str) else json.dumps(v))' "$@"
}
config="$tmp/etc-orthanc"
start_orthanc() { # Orthanc on $config/, HTTP on a free port ($port), DICOM off, storage in $tmp
    local attempt
    rm -rf "$tmp/db"
    mkdir -p "$tmp/db"
    for attempt in 1 2 3; do # the free port may be taken before Orthanc binds it: try another
        port="$(free_port)"
        sed -i -E -e "s|^(\s*\"HttpPort\"\s*:\s*)[0-9]+|\1$port|" \
                  -e "s|^(\s*\"DicomServerEnabled\"\s*:\s*)true|\1false|" \
                  -e "s|^(\s*\"(Storage\|Index)Directory\"\s*:\s*)\"[^\"]*\"|\1\"$tmp/db\"|" \
            "$config/orthanc.json"
        /usr/sbin/Orthanc --verbose "$config" >"$tmp/orthanc.log" 2>&1 &
        orthanc_pid=$!
        for _ in $(seq 100); do
            http /system >/dev/null 2>&1 && return 0
            kill -0 "$orthanc_pid" 2>/dev/null || break
            sleep 0.2
        done
        stop_orthanc
        echo "Orthanc did not start on port $port (attempt $attempt)"
    done
    tail -n 30 "$tmp/orthanc.log"
    fail "Orthanc did not start"
}
stop_orthanc() {
    kill "$orthanc_pid" 2>/dev/null || true
    wait "$orthanc_pid" 2>/dev/null || true
    orthanc_pid=""
}

echo "=== Orthanc with a copy of /etc/orthanc (${SECONDS}s)"
cp -a /etc/orthanc "$config"
[ -f "$config/dicomhist.json" ] || fail "/etc/orthanc/dicomhist.json was not installed"
start_orthanc
grep -E '"(HttpPort|DicomServerEnabled|StorageDirectory)"' "$config/orthanc.json"
grep -F "/usr/share/orthanc/plugins/libOrthancDicomhist.so" "$tmp/orthanc.log" ||
    { tail -n 30 "$tmp/orthanc.log"; fail "Orthanc did not load the installed plugin"; }
[ "$(http /plugins/dicomhist | json_get Version)" = "$version" ] || fail "GET /plugins/dicomhist"
status="$(http /dicomhist/status)"
echo "GET /dicomhist/status: $status"
[ "$(json_get Version <<<"$status")" = "$version" ] || fail "/dicomhist/status: wrong version"
[ "$(json_get AutoEqualize Enabled <<<"$status")" = false ] || fail "/dicomhist/status: Enabled"
id="$(http /instances "$src/sample_data/xray_projection_jpeg_ls.dcm" | json_get ID)"
total="$(http "/instances/$id/histogram?bins=16" | json_get total)"
[ "$total" = 65536 ] || fail "GET /instances/$id/histogram: total $total, not 65536"
echo "GET /instances/$id/histogram: 65536 values, as the command"
stop_orthanc

echo "=== again, with the snippet's commented AutoEqualize example taken in and Threads 2"
sed -i -E -e 's|^(\s*)// ?(\s*("AutoEqualize"\|"Enable"\|"Modalities"\|"Window"\|"ClipLimit"\|"Mode"\|"Bits"\|\}))|\1\2|' \
          -e 's|^(\s*"Threads"\s*:\s*)1\s*$|\12,|' "$config/dicomhist.json"
grep -A 9 '"Threads"' "$config/dicomhist.json"
start_orthanc
status="$(http /dicomhist/status)"
echo "GET /dicomhist/status: $status"
[ "$(json_get AutoEqualize Enabled <<<"$status")" = true ] || fail "AutoEqualize not enabled"
[ "$(json_get AutoEqualize Threads <<<"$status")" = 2 ] || fail "Threads is not 2"
[ "$(json_get AutoEqualize Modalities <<<"$status")" = '["CR", "DX"]' ] || fail "Modalities"
stop_orthanc

# ---------------------------------------------------------------- 5. purge
echo "=== apt-get purge (${SECONDS}s)"
files="$(dpkg -L "${packages[@]}" | sort -u)"
# shellcheck disable=SC2046
purge $(cat "$marker") || fail "apt-get purge"
rm -f "$marker"
left="$(installed)"
[ -z "$left" ] || fail "still known to dpkg after the purge: $left"
while IFS= read -r f; do
    if [ -e "$f" ] && [ ! -d "$f" ]; then fail "left after the purge: $f"; fi
    if [ -d "$f" ] && [[ "$f" == */dicomhist* || "$f" == */libdicomhist* || "$f" == */orthanc-dicomhist* ]]; then
        fail "folder left after the purge: $f"
    fi
done <<<"$files"
[ ! -e /etc/orthanc/dicomhist.json ] || fail "/etc/orthanc/dicomhist.json left after the purge"
while IFS= read -r p; do
    case "$(dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null || true)" in
        "" | un* | pn*) ;;
        *) fail "$p, installed by the test, is still known to dpkg" ;;
    esac
done <"$tmp/to-install"
echo "purged: nothing of the packages is left, nor what apt installed for them"
echo "PASSED in ${SECONDS}s"
