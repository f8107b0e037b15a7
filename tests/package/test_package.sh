#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_package.sh: dicomhist as a C or C++ host gets it (ctest `package`, tests/CMakeLists.txt).
#   1. each install component (runtime, development, cli, orthanc) installs exactly its files,
#      and nothing is left outside a component;
#   2. `cmake --install` of the build tree into a temporary prefix, then the consumer project
#      (tests/package/) built against it through find_package (CMAKE_PREFIX_PATH) and through
#      pkg-config (PKG_CONFIG_PATH), shared and static, C and C++; every binary run on
#      sample_data/xray_projection.dcm must print what the installed command says of that file.
# test_package.sh BUILD_DIR SOURCE_DIR LIBDIR VERSION C_COMPILER CXX_COMPILER [ORTHANC_FILE...]
set -euo pipefail

build="$1" source="$2" libdir="$3" version="$4" cc="$5" cxx="$6"
orthanc_files=("${@:7}") # the Orthanc plugin's files, relative to the prefix (none: not built)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sample="$source/sample_data/xray_projection.dcm"
cmake="${CMAKE:-cmake}" # the CMake that built the tree (tests/CMakeLists.txt sets CMAKE)
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# --- 1. components ----------------------------------------------------------------------------
# Files of one component, with the build type in export file names written as CONFIG.
component_files() { # component
    "$cmake" --install "$build" --prefix "$tmp/component/$1" --component "$1" >/dev/null
    if [ -d "$tmp/component/$1" ]; then
        (cd "$tmp/component/$1" && find . ! -type d | sed -e 's|^\./||' \
            -e 's|Targets-[a-z]*\.cmake$|Targets-CONFIG.cmake|' | sort)
    fi
}
check_component() { # component, expected files...
    local component="$1" got expected
    shift
    got="$(component_files "$component")"
    expected="$(printf '%s\n' "$@" | sed '/^$/d' | sort)"
    if [ "$got" = "$expected" ]; then
        echo "component $component: ${got//$'\n'/ }"
    else
        fail "component $component installs:"$'\n'"$got"$'\n'"expected:"$'\n'"$expected"
    fi
}
so="$libdir/libdicomhist.so"
cmakedir="$libdir/cmake/dicomhist"
check_component runtime "$so.${version%%.*}" "$so.$version"
check_component development include/dicomhist.h "$so" "$libdir/libdicomhist.a" \
    "$libdir/pkgconfig/dicomhist.pc" "$cmakedir/dicomhistConfig.cmake" \
    "$cmakedir/dicomhistConfigVersion.cmake" "$cmakedir/dicomhistTargets.cmake" \
    "$cmakedir/dicomhistTargets-CONFIG.cmake" "$cmakedir/dicomhistStaticTargets.cmake" \
    "$cmakedir/dicomhistStaticTargets-CONFIG.cmake"
check_component cli bin/dicomhist
check_component orthanc "${orthanc_files[@]}"
check_component Unspecified

# --- 2. one install, three ways to build against it ---------------------------------------------
prefix="$tmp/prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
# What each consumer must print: the installed command's view of the same file.
info="$("$prefix/bin/dicomhist" info --json "$sample")"
hist="$("$prefix/bin/dicomhist" histogram --json --bins 16 "$sample")"
field() { # json, name: a number, or the numbers of a [list] joined by commas
    sed -E -e "s/.*\"$2\":\[([-0-9.,]*)\].*/\1/;t" -e "s/.*\"$2\":([-0-9.]*).*/\1/" <<<"$1"
}
range="$(field "$hist" range)"
cat >"$tmp/expected" <<OUT
dicomhist $version (header $version)
$(field "$info" columns) x $(field "$info" rows) x $(field "$info" slices), $(field "$info" bits_stored) of $(field "$info" bits_allocated) bits, stored $(field "$info" stored_min) .. $(field "$info" stored_max)
$(field "$hist" bins) bins over [${range%,*}, ${range#*,}): total $(field "$hist" total), underflow $(field "$hist" underflow), overflow $(field "$hist" overflow)
counts $(field "$hist" counts)
OUT

# Runs one consumer binary and compares its output; with "shared", libdicomhist.so must come
# from the prefix, with "static" not be loaded at all.
check_consumer() { # name, binary, shared|static
    local name="$1" binary="$2" linkage="$3" loaded
    if ! LD_LIBRARY_PATH="$prefix/$libdir" "$binary" "$sample" >"$tmp/$name.out" 2>&1; then
        fail "$name exited non-zero: $(cat "$tmp/$name.out")"
        return
    fi
    if ! diff -u "$tmp/expected" "$tmp/$name.out"; then
        fail "$name printed something else"
        return
    fi
    loaded="$(LD_LIBRARY_PATH="$prefix/$libdir" ldd "$binary" | grep -F 'libdicomhist.so' || true)"
    case "$linkage" in
    shared) [[ "$loaded" == *"=> $prefix/$libdir/libdicomhist.so.${version%%.*} "* ]] ||
        { fail "$name: libdicomhist.so not from the prefix: $loaded"; return; } ;;
    static) [ -z "$loaded" ] || { fail "$name: static build loads $loaded"; return; } ;;
    esac
    echo "ok: $name ($linkage) printed the expected summary"
}

# CMake: find_package(dicomhist) through CMAKE_PREFIX_PATH.
if "$cmake" -S "$source/tests/package" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >"$tmp/configure.log" 2>&1 &&
    "$cmake" --build "$tmp/consumer" >"$tmp/build.log" 2>&1; then
    grep -F -- "-- dicomhist $version found in $prefix/$cmakedir" "$tmp/configure.log" ||
        fail "find_package(dicomhist) did not find the prefix's package"
    check_consumer cmake_c "$tmp/consumer/consumer" shared
    check_consumer cmake_cxx "$tmp/consumer/consumer_cxx" shared
    check_consumer cmake_c_static "$tmp/consumer/consumer_static" static
else
    fail "the CMake consumer did not build:"$'\n'"$(cat "$tmp/configure.log" "$tmp/build.log")"
fi

# pkg-config through PKG_CONFIG_PATH. The static link finds libdicomhist.a first in a folder
# holding only it (beside libdicomhist.so, -ldicomhist would take the shared library).
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
[ "$(pkg-config --variable=prefix dicomhist)" = "$prefix" ] ||
    fail "dicomhist.pc says prefix $(pkg-config --variable=prefix dicomhist), not $prefix"
[ "$(pkg-config --modversion dicomhist)" = "$version" ] || fail "dicomhist.pc version"
mkdir "$tmp/static-only"
ln -s "$prefix/$libdir/libdicomhist.a" "$tmp/static-only/"
pc_build() { # name, compiler, source, link flags...
    local name="$1" compiler="$2" file="$3"
    shift 3
    # shellcheck disable=SC2046 # pkg-config prints flags to split into words
    if "$compiler" -o "$tmp/$name" "$source/tests/package/$file" $(pkg-config --cflags dicomhist) \
        "$@" >"$tmp/$name.log" 2>&1; then
        return 0
    fi
    fail "$name did not build: $(cat "$tmp/$name.log")"
    return 1
}
# shellcheck disable=SC2046
pc_build pkgconfig_c "$cc" consumer.c $(pkg-config --libs dicomhist) &&
    check_consumer pkgconfig_c "$tmp/pkgconfig_c" shared
# shellcheck disable=SC2046
pc_build pkgconfig_cxx "$cxx" consumer.cpp $(pkg-config --libs dicomhist) &&
    check_consumer pkgconfig_cxx "$tmp/pkgconfig_cxx" shared
# shellcheck disable=SC2046
pc_build pkgconfig_c_static "$cc" consumer.c -L"$tmp/static-only" \
    $(pkg-config --static --libs dicomhist) &&
    check_consumer pkgconfig_c_static "$tmp/pkgconfig_c_static" static
echo "pkg-config --libs dicomhist: $(pkg-config --libs dicomhist)"
echo "pkg-config --static --libs dicomhist: $(pkg-config --static --libs dicomhist)"

if [ "$failures" -ne 0 ]; then
    echo "test_package: $failures failure(s)" >&2
    exit 1
fi
echo "test_package: the installed package builds and runs both ways"
