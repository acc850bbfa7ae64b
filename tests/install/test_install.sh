#!/usr/bin/env bash
# test_install.sh — `make install` as a user of the library meets it: into
# a PREFIX of its own, every file where it belongs (the headers, libwick.a,
# libwick.so.X.Y.Z with soname libwick.so.X and its two links, the wick
# command, the fetch script, wick.pc, the GPU plugins built); the README's C
# example built against the installed library with
# `pkg-config --cflags --libs wick` and run, printing what the build
# folder's static library prints; a plugin in PREFIX/lib found both by a
# program linked against libwick.so and by the installed wick; DESTDIR
# staging (the files under DESTDIR, the paths inside them without it);
# `make uninstall` removing what install put there.
# Usage: test_install.sh [BUILD] (default build; run from anywhere). Needs
# make and a C compiler ($CC, default cc); without pkg-config the example's
# builds are skipped. Ends with "N passed, N failed"; exits 1 on any failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
make=${MAKE:-make}
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-install.XXXXXX") || { echo "test_install.sh: mktemp failed"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL install/$1: $2"; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

version=$(awk '/^#define WK_VERSION_(MAJOR|MINOR|PATCH) /{ v = v (v == "" ? "" : ".") $3 } END { print v }' "$root/include/wick.h")
major=${version%%.*}
p="$tmp/prefix"
if "$make" -C "$root" -s BUILD="$build" PREFIX="$p" install > "$tmp/log" 2>&1; then ok; else
  bad make_install "$(tail -5 "$tmp/log")"; finish; fi

# ---- the files ------------------------------------------------------------------
for f in bin/wick lib/libwick.a "lib/libwick.so.$version" lib/pkgconfig/wick.pc share/wick/fetch-default-model.sh; do
  [ -f "$p/$f" ] && ok || bad "file_$f" "$p/$f is not there"
done
for h in "$root"/include/*.h; do
  [ -f "$p/include/wick/$(basename "$h")" ] && ok || bad "header_$(basename "$h")" "not installed"
done
[ "$(readlink "$p/lib/libwick.so.$major")" = "libwick.so.$version" ] && ok || bad link_major "libwick.so.$major -> '$(readlink "$p/lib/libwick.so.$major")'"
[ "$(readlink "$p/lib/libwick.so")" = "libwick.so.$major" ] && ok || bad link_dev "libwick.so -> '$(readlink "$p/lib/libwick.so")'"
if command -v readelf > /dev/null 2>&1; then
  readelf -d "$p/lib/libwick.so.$version" | grep -q "SONAME.*\[libwick.so.$major\]" && ok \
    || bad soname "$(readelf -d "$p/lib/libwick.so.$version" | grep SONAME)"
fi
[ -x "$p/bin/wick" ] && [ "$("$p/bin/wick" version)" = "wick $version" ] && ok || bad wick_version "'$("$p/bin/wick" version 2>&1)'"
for k in cuda rocm; do
  if [ -f "$build/libwick_$k.so" ]; then [ -f "$p/lib/libwick_$k.so" ] && ok || bad "plugin_$k" "built but not installed"; fi
done
grep -qx "Version: $version" "$p/lib/pkgconfig/wick.pc" && ok || bad pc_version "$(cat "$p/lib/pkgconfig/wick.pc")"

# ---- the README's C example against the installed library -------------------------
awk '/^## A short example/ { s = 1 } s && /^```c$/ { c = 1; next } c && /^```$/ { exit } c' "$root/README.md" > "$tmp/example.c"
grep -q "wk_device_open" "$tmp/example.c" && ok || bad readme_example "no C example found in README.md's 'A short example'"
if ! command -v pkg-config > /dev/null 2>&1; then
  echo "skip install/pkg_config: no pkg-config (apt-get install pkg-config)"
else
  export PKG_CONFIG_PATH="$p/lib/pkgconfig"
  flags=$(pkg-config --cflags --libs wick 2>&1) && ok || bad pkg_config "$flags"
  # shellcheck disable=SC2086
  if "$cc" -o "$tmp/example" "$tmp/example.c" $flags > "$tmp/log" 2>&1; then ok; else bad example_build "$cc $flags: $(head -5 "$tmp/log")"; fi
  # the build folder's way (README): the same numbers
  "$cc" -I"$root/include" -o "$tmp/example_static" "$tmp/example.c" "$build/libwick.a" -lm -ldl -pthread > "$tmp/log" 2>&1 \
    || bad example_static_build "$(head -5 "$tmp/log")"
  want=$("$tmp/example_static" 2>&1)
  got=$(LD_LIBRARY_PATH="$p/lib" "$tmp/example" 2>&1)
  [ -n "$want" ] && [ "$got" = "$want" ] && ok || bad example_run "installed: '$got'; build folder: '$want'"
  LD_LIBRARY_PATH="$p/lib" ldd "$tmp/example" 2>/dev/null | grep -q "libwick.so.$major => $p/lib/libwick.so.$major" && ok \
    || bad example_shared "$(LD_LIBRARY_PATH="$p/lib" ldd "$tmp/example" 2>&1 | grep wick)"
  # a plugin in PREFIX/lib: found beside libwick.so, and by PREFIX/bin/wick
  # (libwick.so itself stands in for one: a shared object without the entry point)
  if [ ! -f "$build/libwick_cuda.so" ]; then
    cp "$build/libwick.so" "$p/lib/libwick_cuda.so"
    printf '#include <stdio.h>\n#include "wick.h"\nint main(void) { printf("%%s\\n", wk_plugin_status("cuda")); return 0; }\n' > "$tmp/status.c"
    "$cc" -o "$tmp/status" "$tmp/status.c" $flags > "$tmp/log" 2>&1 || bad status_build "$(head -5 "$tmp/log")"
    LD_LIBRARY_PATH="$p/lib" "$tmp/status" | grep -q "^not loadable: $p/lib/libwick_cuda.so has no entry point" && ok \
      || bad plugin_beside_libwick "'$(LD_LIBRARY_PATH="$p/lib" "$tmp/status")'"
    env -u WICK_CUDA_PLUGIN -u WICK_PLUGIN_DIR "$p/bin/wick" info -v | grep -q "not loadable: .*$p/bin/../lib/libwick_cuda.so has no entry point\|not loadable: .*$p/lib/libwick_cuda.so has no entry point" && ok \
      || bad plugin_beside_bin "$("$p/bin/wick" info -v | grep -A1 '^  cuda')"
    rm -f "$p/lib/libwick_cuda.so"
  fi
fi

# ---- DESTDIR: staged under it, its paths without it --------------------------------
if "$make" -C "$root" -s BUILD="$build" PREFIX=/opt/wick DESTDIR="$tmp/stage" install > "$tmp/log" 2>&1; then ok; else
  bad destdir_install "$(tail -5 "$tmp/log")"; fi
[ -f "$tmp/stage/opt/wick/include/wick/wick.h" ] && [ -L "$tmp/stage/opt/wick/lib/libwick.so" ] && ok || bad destdir_files "$(cd "$tmp/stage" && find . | head)"
grep -qx "libdir=/opt/wick/lib" "$tmp/stage/opt/wick/lib/pkgconfig/wick.pc" && ok || bad destdir_pc "$(cat "$tmp/stage/opt/wick/lib/pkgconfig/wick.pc")"

# ---- uninstall --------------------------------------------------------------------
"$make" -C "$root" -s BUILD="$build" PREFIX="$p" uninstall > "$tmp/log" 2>&1 || bad uninstall "$(tail -5 "$tmp/log")"
left=$(find "$p" -type f -o -type l)
[ -z "$left" ] && ok || bad uninstall_left "$left"
finish
