#!/usr/bin/env bash
# test_cli.sh — the `wick` command line as a newcomer meets it: exit
# statuses (0 success, 2 a bad command line), `wick info` on a machine
# without GPUs (one short line per GPU kind, the loader's words only under
# -v), how each kind of missing plugin reads (not built, no driver, not
# loadable), a plugin named in the environment that cannot be loaded (not
# ignored when another plugin sits beside the program), and a bad
# WICK_NUM_THREADS (a warning, not silence); `wick inspect` and `wick quantize`
# on the model-file fixtures of tests/data/model_files (tables, values, mixes,
# and a missing, truncated or unreadable file: a message and exit 1);
# `wick run`'s command line and its errors (a missing or wrong file, no cache);
# `wick serve`'s (or, built without libmicrohttpd, what it says to install);
# `wick template`'s, and a template rendered on its own.
# Usage: test_cli.sh path/to/wick. Ends with "N passed, N failed"; exits 1
# on any failure.
set -u
wick=${1:-build/wick}
[ -x "$wick" ] || { echo "test_cli.sh: no executable at '$wick' (run make first)"; echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-cli.XXXXXX") || { echo "test_cli.sh: mktemp failed"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL cli/$1: $2"; }
# expect NAME STATUS CMD...: the command exits with STATUS; out and err
# then print what it wrote
expect() {
  local name=$1 want=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else bad "$name" "exit $rc, expected $want; stderr: $(head -c 300 "$tmp/err")"; fi
}
out() { cat "$tmp/out"; }
err() { cat "$tmp/err"; }
line_of() { out | grep -E "^  $1 "; }   # the short line of one GPU kind
# has NAME REGEX: the output has a line matching REGEX
has() { out | grep -qE "$2" && ok || bad "$1" "no line matching '$2' in: $(out | grep -E '^  (cuda|rocm) ' | tr '\n' '|')"; }
hasnt() { out | grep -qE "$2" && bad "$1" "a line matches '$2': $(out | grep -E "$2" | head -1)" || ok; }

# ---- exit statuses -----------------------------------------------------------
expect no_args 2 "$wick"
err | grep -q "usage: wick" && ok || bad no_args_usage "no usage on stderr"
[ -s "$tmp/out" ] && bad no_args_stdout "printed on stdout: $(out | head -1)" || ok
expect unknown_command 2 "$wick" frobnicate
expect version 0 "$wick" version
out | grep -qE '^wick [0-9]+\.[0-9]+\.[0-9]+$' && ok || bad version_text "printed '$(out)'"
expect version_extra_arg 2 "$wick" version --x
expect version_extra_word 2 "$wick" version extra
expect info_extra_arg 2 "$wick" info extra
expect bench_unknown_option 2 "$wick" bench --frobnicate
expect help 0 "$wick" help
out | grep -q "usage: wick" && ok || bad help_stdout "no usage on stdout"
expect help_unknown 2 "$wick" help frobnicate

# ---- wick info as it stands ------------------------------------------------------
expect info 0 "$wick" info
hasnt info_short "cannot open shared object file"
hasnt info_no_not_available "not available"
for k in cuda rocm; do
  if out | grep -qE "^  $k:[0-9]"; then ok; ok; continue; fi       # devices found: listed as kind:N
  line=$(line_of $k)
  [ -n "$line" ] && [ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] && ok || bad "info_${k}_one_line" "'$line'"
  printf '%s' "$line" | grep -qE "^  $k +(no devices found|not built|no driver|not loadable|not loaded)" && ok \
    || bad "info_${k}_state" "'$line'"
done
expect info_verbose 0 "$wick" info -v

# ---- plugins, in a folder of our own: the program and what lies beside it --------
mkdir -p "$tmp/bin" "$tmp/elsewhere"
cp "$wick" "$tmp/bin/wick"
w="$tmp/bin/wick"
unset WICK_PLUGIN_DIR WICK_CUDA_PLUGIN WICK_ROCM_PLUGIN

expect isolated_info 0 "$w" info
for k in cuda rocm; do has "isolated_${k}_not_built" "^  $k +not built"; done
hasnt isolated_short "cannot open shared object file"
expect isolated_info_v 0 "$w" info -v
has isolated_verbose_reason "^ +not built: .*libwick_cuda.so \(beside libwick\): .*cannot open shared object file"

# beside the program: a shared object that is no plugin (libwick.so has no
# plugin entry point), and one that needs a library this machine lacks
lib=$(dirname "$wick")/libwick.so
cc=${CC:-cc}
if [ -f "$lib" ]; then
  cp "$lib" "$tmp/bin/libwick_cuda.so"
  expect beside_not_loadable 0 "$w" info
  has beside_not_loadable_line "^  cuda +not loadable"
  expect beside_not_loadable_v 0 "$w" info -v
  has beside_not_loadable_reason "has no entry point wk_backend_entry_v1"
  # run by name through PATH, the program still finds what lies beside it
  expect beside_through_path 0 env PATH="$tmp/bin:$PATH" wick info
  has beside_through_path_line "^  cuda +not loadable"
  # the variable names a file that is not there: that, not the plugin beside
  expect env_cuda_missing 0 env WICK_CUDA_PLUGIN=/nonexistent/libwick_cuda.so "$w" info
  has env_cuda_named "^  cuda +not loaded: WICK_CUDA_PLUGIN=/nonexistent/libwick_cuda.so cannot be loaded$"
  hasnt env_cuda_short "cannot open shared object file"
  expect env_cuda_missing_v 0 env WICK_CUDA_PLUGIN=/nonexistent/libwick_cuda.so "$w" info -v
  has env_cuda_reason "WICK_CUDA_PLUGIN=/nonexistent/libwick_cuda.so cannot be loaded: .*No such file"
  # the variable names a loadable file: it is the one used
  cp "$lib" "$tmp/elsewhere/named.so"
  expect env_cuda_used 0 env WICK_CUDA_PLUGIN="$tmp/elsewhere/named.so" "$w" info -v
  has env_cuda_used_path "not loadable: .*elsewhere/named.so has no entry point"
  rm -f "$tmp/bin/libwick_cuda.so"
else
  bad beside_plugins "no $lib to stand in for a plugin"
fi
if command -v "$cc" >/dev/null 2>&1; then
  printf 'int wick_test_dep(void);\nint wick_test_dep(void) { return 1; }\n' > "$tmp/dep.c"
  printf 'int wick_test_dep(void);\nint wick_test_use(void);\nint wick_test_use(void) { return wick_test_dep(); }\n' > "$tmp/plugin.c"
  if "$cc" -shared -fPIC -o "$tmp/libwicktestdep.so" "$tmp/dep.c" &&
     "$cc" -shared -fPIC -o "$tmp/bin/libwick_rocm.so" "$tmp/plugin.c" -L"$tmp" -lwicktestdep; then
    rm -f "$tmp/libwicktestdep.so"
    expect no_driver 0 "$w" info
    has no_driver_line "^  rocm +no driver"
    hasnt no_driver_short "libwicktestdep"
    expect no_driver_v 0 "$w" info -v
    has no_driver_reason "^ +no driver: .*libwicktestdep.so: cannot open shared object file"
    expect env_rocm_missing 0 env WICK_ROCM_PLUGIN=/nonexistent.so "$w" info
    has env_rocm_named "^  rocm +not loaded: WICK_ROCM_PLUGIN=/nonexistent.so cannot be loaded$"
    # the same plugin found through WICK_PLUGIN_DIR
    mv "$tmp/bin/libwick_rocm.so" "$tmp/elsewhere/libwick_rocm.so"
    expect plugin_dir_no_driver 0 env WICK_PLUGIN_DIR="$tmp/elsewhere" "$w" info
    has plugin_dir_no_driver_line "^  rocm +no driver"
  else
    bad no_driver_build "$cc could not build the stand-in plugin"
  fi
else
  echo "cli/no_driver: skipped (no C compiler '$cc')"
fi

# ---- WICK_NUM_THREADS that is not a positive integer: a warning on stderr --------
for v in abc 0 -3 4x; do
  expect "num_threads_$v" 0 env WICK_NUM_THREADS="$v" "$wick" info
  err | grep -qE "^wick: WICK_NUM_THREADS='$v' is not a positive integer; using [0-9]+ threads?$" && ok \
    || bad "num_threads_${v}_warns" "stderr: '$(err)'"
  [ "$(err | grep -c WICK_NUM_THREADS)" -eq 1 ] && ok || bad "num_threads_${v}_once" "stderr: '$(err)'"
done
expect num_threads_ok 0 env WICK_NUM_THREADS=1 "$wick" info
err | grep -q WICK_NUM_THREADS && bad num_threads_ok_quiet "warned for 1" || ok
out | grep -qE "1 compute unit;" && ok || bad num_threads_ok_used "cpu line: '$(out | grep -A1 '^  cpu' | tail -1)'"

# ---- wick inspect and wick quantize on the model-file fixtures ---------------------
mf="$(dirname "$0")/../data/model_files"
expect inspect_gguf 0 "$wick" inspect "$mf/types.gguf"
has inspect_gguf_header '^.*types\.gguf: GGUF v3, .*alignment 64'
has inspect_gguf_value '^  test\.u64 +u64 +18446744073709551615$'
has inspect_gguf_nested '^  test\.arr\.nested3 +\[array x 2\] \[\[array x 2\] \[\[i32 x 1\] \[1\]'
has inspect_gguf_tensor '^ +4 +t\.i8 +I8 +\[5\] .*wick has no dtype'
has inspect_gguf_iq '^ +20 +t\.iq2_xxs +IQ2_XXS +\[2, 256\] +[0-9]+ +132$'
has inspect_gguf_total '^total: 29 tensors'
expect inspect_sharded 0 "$wick" inspect "$mf/sharded"
has inspect_sharded_files '^.*sharded: safetensors, 2 files$'
has inspect_sharded_tensor '^ +[0-9]+ +lm_head\.weight +F16 +\[4, 8\] .*model-00002-of-00002\.safetensors$'
expect inspect_st 0 "$wick" inspect "$mf/types.safetensors"
has inspect_st_meta '^  note +"h.llo"$'
expect inspect_short 0 "$wick" inspect "$mf/types.gguf"
has inspect_short_str '^  test\.arr\.str +\[string x 4\] \["a", "", ".+n.+", "x y"\]$'
expect inspect_not_a_file 1 "$wick" inspect --all /dev/null
err | grep -q "/dev/null: not a regular file" && ok || bad inspect_not_a_file_words "stderr: '$(err)'"
expect inspect_all_gguf 0 "$wick" inspect --all "$mf/small.gguf"
has inspect_all_nested '^  test\.nested +\[array x 2\] \[\[i32 x 2\] \[1, 2\], \[i32 x 1\] \[3\]\]$'
expect inspect_no_file 2 "$wick" inspect
expect inspect_two_files 2 "$wick" inspect "$mf/small.gguf" "$mf/small.gguf"
expect inspect_bad_option 2 "$wick" inspect --frobnicate "$mf/small.gguf"
expect inspect_missing 1 "$wick" inspect "$tmp/absent.gguf"
err | grep -q "absent.gguf: cannot open" && ok || bad inspect_missing_words "stderr: '$(err)'"
head -c 100 "$mf/small.gguf" > "$tmp/cut.gguf"
expect inspect_truncated 1 "$wick" inspect "$tmp/cut.gguf"
err | grep -qE "cut\.gguf: truncated: .*needs [0-9]+ bytes at offset [0-9]+" && ok || bad inspect_truncated_words "stderr: '$(err)'"
expect help_inspect 0 "$wick" help inspect
out | grep -q "usage: wick inspect" && ok || bad help_inspect_text "'$(out | head -1)'"

expect quantize_q8_0 0 "$wick" quantize "$mf/small.gguf" "$tmp/q8.gguf" q8_0
has quantize_q8_0_line '^\[ *1/3\] a\.f32 .* f32 +-> f32$'
expect quantize_q8_0_inspect 0 "$wick" inspect "$tmp/q8.gguf"
has quantize_q8_0_kept '^ +1 +b\.q4_0 +Q4_0 '
has quantize_q8_0_ftype '^  general\.file_type +u32 +7$'
has quantize_q8_0_metadata '^  tokenizer\.ggml\.tokens +\[string x 3\]'
expect quantize_sharded 0 "$wick" quantize -q "$mf/sharded" "$tmp/sh.gguf" q4_k_m
expect quantize_sharded_inspect 0 "$wick" inspect "$tmp/sh.gguf"
has quantize_sharded_f16 '^ +[0-9]+ +model\.embed\.weight +F16 '   # rows of 8: no block type fits
has quantize_sharded_norm '^ +[0-9]+ +model\.norm\.weight +F32 '
# llama.cpp's Q4_K_M mix on 8 layers stored in name order: q6_k where use_more_bits(layer, 8) (0, 3, 6, 7)
expect quantize_mix 0 "$wick" quantize -q "$mf/mix.gguf" "$tmp/mix.gguf" q4_k_m
expect quantize_mix_inspect 0 "$wick" inspect "$tmp/mix.gguf"
for l in 0 1 2 3 4 5 6 7; do
  case $l in 0|3|6|7) t=Q6_K ;; *) t=Q4_K ;; esac
  has "quantize_mix_attn_v_$l" "^ +[0-9]+ +blk\.$l\.attn_v\.weight +$t "
  has "quantize_mix_ffn_down_$l" "^ +[0-9]+ +blk\.$l\.ffn_down\.weight +$t "
  has "quantize_mix_norm_$l" "^ +[0-9]+ +blk\.$l\.attn_norm\.weight +F32 "
done
has quantize_mix_output '^ +[0-9]+ +output\.weight +Q6_K '
has quantize_mix_embd '^ +[0-9]+ +token_embd\.weight +Q4_K '
has quantize_mix_ftype '^  general\.file_type +u32 +15$'
expect quantize_unreadable 1 "$wick" quantize "$mf/types.gguf" "$tmp/t.gguf" q4_0
err | grep -q "'t.i8' is of type I8" && ok || bad quantize_unreadable_words "stderr: '$(err)'"
[ -e "$tmp/t.gguf" ] || [ -e "$tmp/t.gguf.tmp" ] && bad quantize_unreadable_left "a file was left behind" || ok
expect quantize_bad_type 2 "$wick" quantize "$mf/small.gguf" "$tmp/x.gguf" q4_z
err | grep -q "unknown TYPE 'q4_z'" && ok || bad quantize_bad_type_words "stderr: '$(err)'"
expect quantize_u8_type 2 "$wick" quantize "$mf/small.gguf" "$tmp/x.gguf" u8
expect quantize_iq_lattice 2 "$wick" quantize "$mf/small.gguf" "$tmp/x.gguf" iq2_xxs
err | grep -q "cannot quantize to iq2_xxs" && ok || bad quantize_iq_lattice_words "stderr: '$(err)'"
expect quantize_iq4_xs 0 "$wick" quantize -q "$mf/mix.gguf" "$tmp/iq4.gguf" iq4_xs
expect quantize_iq4_xs_inspect 0 "$wick" inspect "$tmp/iq4.gguf"
has quantize_iq4_xs_ftype '^  general\.file_type +u32 +30$'
has quantize_iq4_xs_output '^ +[0-9]+ +output\.weight +IQ4_XS '
expect quantize_missing_arg 2 "$wick" quantize "$mf/small.gguf" "$tmp/x.gguf"
expect quantize_missing_in 1 "$wick" quantize "$tmp/absent.safetensors" "$tmp/x.gguf" q8_0
err | grep -q "absent.safetensors: cannot open" && ok || bad quantize_missing_in_words "stderr: '$(err)'"
expect help_quantize 0 "$wick" help quantize
out | grep -q "q4_k_m" && ok || bad help_quantize_text "'$(out | head -1)'"

# ---- wick run: the command line (the model itself: suites llm and llm_ref) ------------
expect run_help 0 "$wick" run --help
out | grep -q "usage: wick run" && ok || bad run_help_text "'$(out | head -1)'"
expect help_run 0 "$wick" help run
expect run_help_fast 0 "$wick" run --help
out | grep -q -- "--fast" && ok || bad run_help_fast_text "no --fast in wick run --help"
# --fast is an option (the file is what fails), not an unknown one
expect run_fast_option 1 "$wick" run "$tmp/absent.gguf" --fast -p hi --device cpu
# --tp N: a count from 1 to 64
expect run_tp_zero 2 "$wick" run x.gguf --tp 0 -p hi
# --threads N: a count from 1 to 1024, the range in the message
expect run_threads_zero 2 "$wick" run x.gguf --threads 0 -p hi
err | grep -q "from 1 to 1024" && ok || bad run_threads_zero_words "stderr: '$(err)'"
expect run_tp_fraction 2 "$wick" run x.gguf --tp 1.5 -p hi
expect run_tp_chat_missing_model 1 "$wick" run "$tmp/absent.gguf" --tp 2 --chat --device cpu
# an interactive chat split over 3 cpu ranks writes what one device writes
# (two turns, sampled with a seed), with the default model when it is in
# the cache (CI's is; otherwise skipped); on the exact path (--exact): the
# integer path's 8-bit activations turn the ranks' other order of partial
# sums into quantization noise (docs/tensor-parallel.md)
smol="${WICK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wick}/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -f "$smol" ]; then
  printf 'Name a color.\nAnd another one?\n\n' > "$tmp/turns"
  expect run_chat_one 0 sh -c '"$1" run "$2" --chat --device cpu --exact --temp 0.8 --seed 5 -n 12 -q < "$3"' _ "$wick" "$smol" "$tmp/turns"
  cp "$tmp/out" "$tmp/chat1"
  expect run_tp_chat 0 sh -c '"$1" run "$2" --chat --device cpu --exact --temp 0.8 --seed 5 -n 12 -q --tp 3 < "$3"' _ "$wick" "$smol" "$tmp/turns"
  [ -s "$tmp/chat1" ] && cmp -s "$tmp/chat1" "$tmp/out" && ok || bad run_tp_chat_same "one device: '$(cat "$tmp/chat1")'; --tp 3: '$(out)'"
  # a prompt per line read (the empty line is skipped, not the end), printed once for the 3 ranks
  [ "$(grep -c '^> ' "$tmp/err")" -le 1 ] && [ "$(grep -o '> ' "$tmp/err" | wc -l)" -eq 4 ] && ok || bad run_tp_chat_prompts "stderr: '$(err)'"
  # the chat's own commands never reach the model; /exit ends it (what follows is not read)
  printf '/help\n/frobnicate\n/clear\n/exit\nNever sent.\n' > "$tmp/turns"
  expect run_chat_commands 0 sh -c '"$1" run "$2" --chat --device cpu -n 4 < "$3"' _ "$wick" "$smol" "$tmp/turns"
  err | grep -q "forget the conversation" && ok || bad run_chat_help "stderr: '$(err)'"
  err | grep -q "unknown command /frobnicate" && ok || bad run_chat_unknown "stderr: '$(err)'"
  err | grep -q "the conversation is forgotten" && ok || bad run_chat_clear "stderr: '$(err)'"
  err | grep -q "prompt:" && bad run_chat_nothing_sent "a line reached the model: '$(err)'" || ok
  # Ctrl-C (SIGINT) during a reply stops it and the conversation goes on:
  # the second turn's context holds the first (it grows), /clear forgets
  # it (the third turn's is smaller than the first's), and a Ctrl-C at the
  # prompt ends the program (status 130)
  mkfifo "$tmp/in"
  "$wick" run "$smol" --chat --device cpu --temp 0 --ignore-eos -n 0 --ctx 1024 < "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  exec 3> "$tmp/in"
  # waitfor COND: up to 120 s for the shell condition, while wick runs
  waitfor() { for _ in $(seq 1200); do eval "$1" && return 0; kill -0 $pid 2>/dev/null || return 1; sleep 0.1; done; return 1; }
  ctx() { grep -o 'context: [0-9]*' "$tmp/err" | sed -n "$1p" | cut -d' ' -f2; }
  turn() {   # turn TEXT MIN_BYTES: send a line, Ctrl-C once the reply has MIN_BYTES, wait for the speed line
    local want c0; want=$(( $(wc -c < "$tmp/out") + $2 )); c0=$(grep -c 'context:' "$tmp/err")
    printf '%s\n' "$1" >&3
    waitfor '[ $(wc -c < "$tmp/out") -ge $want ]' && kill -INT $pid
    waitfor '[ $(grep -c "context:" "$tmp/err") -gt $c0 ]'
  }
  turn "Tell me a long story about a dragon." 200 && ok || bad run_chat_ctrl_c_first "stderr: '$(err)'"
  turn "And then?" 4 && ok || bad run_chat_ctrl_c_second "stderr: '$(err)'"
  printf '/clear\n' >&3
  turn "Hi" 4 && ok || bad run_chat_ctrl_c_third "stderr: '$(err)'"
  [ "$(grep -c '^(stopped' "$tmp/err")" -eq 3 ] && ok || bad run_chat_stopped_words "stderr: '$(err)'"
  c1=$(ctx 1); c2=$(ctx 2); c3=$(ctx 3)
  [ -n "$c1" ] && [ -n "$c2" ] && [ "$c2" -gt "$c1" ] && ok || bad run_chat_kept "contexts '$c1' then '$c2'"
  [ -n "$c3" ] && [ "$c3" -lt "$c1" ] && ok || bad run_chat_cleared "contexts '$c1' then, after /clear, '$c3'"
  sleep 0.3
  kill -INT $pid 2>/dev/null
  wait $pid
  rc=$?
  exec 3>&-
  [ "$rc" -eq 130 ] && ok || bad run_chat_ctrl_c_at_prompt "exit $rc, expected 130 (stderr: $(tail -c 300 "$tmp/err"))"
  # the same split over 3 cpu ranks: every rank stops at the same token (none left waiting)
  rm -f "$tmp/in"; mkfifo "$tmp/in"
  "$wick" run "$smol" --chat --device cpu --temp 0 --ignore-eos -n 0 --ctx 1024 --tp 3 < "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  exec 3> "$tmp/in"
  turn "Tell me a long story about a dragon." 100 && ok || bad run_tp_chat_ctrl_c "stderr: '$(err)'"
  turn "And then?" 4 && ok || bad run_tp_chat_ctrl_c_second "stderr: '$(err)'"
  printf '/exit\n' >&3
  wait $pid
  rc=$?
  exec 3>&-
  [ "$rc" -eq 0 ] && [ "$(grep -c '^(stopped' "$tmp/err")" -eq 2 ] && ok || bad run_tp_chat_ctrl_c_exit "exit $rc; stderr: '$(err)'"
  c1=$(ctx 1); c2=$(ctx 2)
  [ -n "$c1" ] && [ -n "$c2" ] && [ "$c2" -gt "$c1" ] && ok || bad run_tp_chat_kept "contexts '$c1' then '$c2'"
  # on a terminal: line editing and history (libedit), Ctrl-C and Ctrl-D
  if command -v python3 >/dev/null 2>&1; then
    expect run_chat_terminal 0 python3 "$(dirname "$0")/chat_pty.py" "$wick" "$smol"
    out | grep '^skip' ; out | grep '^FAIL' && bad run_chat_terminal_checks "$(out | grep '^FAIL' | head -c 600)" || ok
  else
    echo "skip cli/run_chat_terminal: no python3"
  fi
  # WICK_LLM_DUMP=name: that block's result, once per layer and pass (logits: once per pass)
  expect run_dump_attention 0 env WICK_LLM_DUMP=attention "$wick" run "$smol" --device cpu -p hi -n 2 -q
  [ "$(err | grep -c '^wick: dump pos [0-9]* layer [0-9]* attention \[1, ')" -eq 60 ] && ok || bad run_dump_attention_lines "stderr: '$(err | head -3)'"
  expect run_dump_logits 0 env WICK_LLM_DUMP=logits "$wick" run "$smol" --device cpu -p hi -n 2 -q
  [ "$(err | grep -c '^wick: dump pos [0-9]* layer 29 logits \[1, 49152\]')" -eq 2 ] && ok || bad run_dump_logits_lines "stderr: '$(err | head -3)'"
  # WICK_LLM_TIMING=2: the device time by part, one line per rank
  expect run_timing_parts 0 env WICK_LLM_TIMING=2 "$wick" run "$smol" --device cpu --tp 3 -p hi -n 4 -q
  [ "$(err | grep -c "device time of a timed pass by part.*embedding [0-9.]*;.*attention [0-9.]*;.*residual_norm [0-9.]*; gated_mlp [0-9.]*; logits [0-9.]*; all [0-9.]* of the host's [0-9.]*$")" -eq 3 ] \
    && ok || bad run_timing_parts_lines "stderr: '$(err)'"
else
  echo "skip cli/run_tp_chat: no $smol"
fi
expect run_tp_missing_model 1 "$wick" run "$tmp/absent.gguf" --tp 2 -p hi --device cpu
expect run_help_tp 0 "$wick" run --help
out | grep -q -- "--tp N" && ok || bad run_help_tp_text "no --tp in wick run --help"
expect run_unknown_option 2 "$wick" run x.gguf --frobnicate
expect run_two_models 2 "$wick" run a.gguf b.gguf
expect run_prompt_and_chat 2 "$wick" run x.gguf -p hi --chat
expect run_bad_number 2 "$wick" run x.gguf --temp warm
expect run_bad_top_p 2 "$wick" run x.gguf --top-p 1.5
expect run_missing_value 2 "$wick" run x.gguf -n
expect run_missing_model 1 "$wick" run "$tmp/absent.gguf" -p hi --device cpu
err | grep -q "absent" && ok || bad run_missing_model_words "stderr: '$(err)'"
expect run_not_a_model 1 "$wick" run "$mf/types.gguf" -p hi --device cpu
err | grep -q "types.gguf" && ok || bad run_not_a_model_words "stderr: '$(err)'"
# a text file named .gguf: a GGUF error, not a safetensors one
printf 'just some text\n' > "$tmp/text.gguf"
expect run_text_named_gguf 1 "$wick" run "$tmp/text.gguf" -p hi --device cpu
err | grep -q "text.gguf: not a GGUF file" && ok || bad run_text_named_gguf_words "stderr: '$(err)'"
err | grep -qi "safetensors" && bad run_text_named_gguf_no_st "stderr: '$(err)'" || ok
expect run_bad_device 1 "$wick" run "$mf/types.gguf" -p hi --device nodevice:3
err | grep -q "unknown device 'nodevice:3' (cpu, cuda:N or rocm:N); devices here: cpu" && ok || bad run_bad_device_words "stderr: '$(err)'"
# a GPU that is not there: which devices there are, in one line, before any model is fetched
for k in cuda rocm; do
  if [ "$(env -u WICK_CUDA_PLUGIN -u WICK_ROCM_PLUGIN "$wick" info | grep -cE "^  $k:[0-9]")" -eq 0 ]; then
    expect "run_no_${k}" 1 env -u HOME -u XDG_CACHE_HOME -u WICK_CACHE "$wick" run --device $k:0 -p hi
    err | grep -qE "^wick run: no (CUDA|ROCm) device: .*; devices here: cpu" && [ "$(err | wc -l)" -eq 1 ] && ok \
      || bad "run_no_${k}_words" "stderr: '$(err)'"
    err | grep -q "cannot open shared object\|device_open" && bad "run_no_${k}_plain" "stderr: '$(err)'" || ok
    expect "run_tp_no_${k}" 1 "$wick" run "$tmp/absent.gguf" --device $k:0 --tp 4 -p hi
    [ "$(err | wc -l)" -eq 1 ] && err | grep -q "devices here: cpu" && ok || bad "run_tp_no_${k}_once" "stderr: '$(err)'"
  fi
done
# --tp N: why the model did not load, once (not once per rank)
expect run_tp_error_once 1 "$wick" run "$tmp/text.gguf" --tp 4 -p hi --device cpu
[ "$(err | grep -c 'not a GGUF file')" -eq 1 ] && ok || bad run_tp_error_once_lines "stderr: '$(err)'"
# an empty prompt is refused (usage), before a model is looked for
expect run_empty_prompt 2 env -u HOME -u XDG_CACHE_HOME -u WICK_CACHE "$wick" run -p ""
err | grep -q "the prompt is empty" && ok || bad run_empty_prompt_words "stderr: '$(err)'"
expect run_empty_stdin 2 sh -c 'printf "  \n" | "$1" run "$2" --device cpu' _ "$wick" "$tmp/absent.gguf"
err | grep -q "the prompt is empty" && ok || bad run_empty_stdin_words "stderr: '$(err)'"
# a number out of range names the range
expect run_negative_n 2 "$wick" run x.gguf -n -5 -p hi
err | grep -q "^wick run: -n -5 is out of range: -n takes a whole number, 0 or more" && ok || bad run_negative_n_words "stderr: '$(err)'"
expect run_fraction_n 2 "$wick" run x.gguf -n 2.5 -p hi
expect run_big_top_p_words 2 "$wick" run x.gguf --top-p 2 -p hi
err | grep -q "at most 1" && ok || bad run_top_p_range_words "stderr: '$(err)'"
# no cache folder and no model: a message, not a crash
expect run_no_cache 1 env -u HOME -u XDG_CACHE_HOME -u WICK_CACHE "$wick" run -p hi
err | grep -q "wick run:" && ok || bad run_no_cache_words "stderr: '$(err)'"

# ---- wick serve: the command line (the server itself: tests/server) ------------------
expect serve_help 0 "$wick" serve --help
out | grep -q "usage: wick serve" && ok || bad serve_help_text "'$(out | head -1)'"
expect help_serve 0 "$wick" help serve
"$wick" serve --frobnicate > "$tmp/out" 2> "$tmp/err"
if grep -q "built without libmicrohttpd" "$tmp/err"; then
  err | grep -q "apt-get install libmicrohttpd-dev" && ok || bad serve_not_built_words "stderr: '$(err)'"
else
  expect serve_unknown_option 2 "$wick" serve --frobnicate
  expect serve_two_models 2 "$wick" serve a.gguf b.gguf
  expect serve_bad_port 2 "$wick" serve x.gguf --port 70000
  expect serve_bad_dtype 2 "$wick" serve x.gguf --dtype f8
  expect serve_bad_kv 2 "$wick" serve x.gguf --kv-gib 0
  expect serve_bad_queue 2 "$wick" serve x.gguf --max-queue 0
  expect serve_fraction_port 2 "$wick" serve x.gguf --port 80.5
  expect serve_missing_value 2 "$wick" serve x.gguf --host
  expect serve_bad_cpu_threads 2 "$wick" serve x.gguf --cpu-threads 0
  err | grep -q "cpu-threads '0'" && ok || bad serve_bad_cpu_threads_words "stderr: '$(err)'"
  expect serve_missing_model 1 "$wick" serve "$tmp/absent.gguf" --device cpu -q
  err | grep -q "absent" && ok || bad serve_missing_model_words "stderr: '$(err)'"
  expect serve_no_cache 1 env -u HOME -u XDG_CACHE_HOME -u WICK_CACHE "$wick" serve
  err | grep -q "wick serve:" && ok || bad serve_no_cache_words "stderr: '$(err)'"
fi

# ---- wick template: its command line and a template on its own ---------------------
expect template_help 0 "$wick" template --help
out | grep -q "usage: wick template" && ok || bad template_help_text "'$(out | head -1)'"
expect template_help_cmd 0 "$wick" help template
expect template_no_args 2 "$wick" template
expect template_bad_option 2 "$wick" template --frobnicate x.json
expect template_bad_now 2 "$wick" template --template x.jinja --now soon x.json
printf '%s' "{% for m in messages %}<{{ m.role }}>{{ m.content|trim }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}" > "$tmp/t.jinja"
printf '%s' '{"messages": [{"role": "user", "content": " hi "}]}' > "$tmp/m.json"
expect template_renders 0 "$wick" template --template "$tmp/t.jinja" --generation-prompt "$tmp/m.json"
[ "$(out)" = "<user>hi<assistant>" ] && ok || bad template_text "'$(out)'"
expect template_stdin 0 "$wick" template --template "$tmp/t.jinja" - < "$tmp/m.json"
[ "$(out)" = "<user>hi" ] && ok || bad template_stdin_text "'$(out)'"
printf '%s' "line 1
{% if x %}" > "$tmp/bad.jinja"
expect template_syntax_error 1 "$wick" template --template "$tmp/bad.jinja" "$tmp/m.json"
err | grep -q "line 2: unexpected end of template" && ok || bad template_error_words "stderr: '$(err)'"
expect template_missing_json 1 "$wick" template --template "$tmp/t.jinja" "$tmp/none.json"
expect template_missing_model 1 "$wick" template "$tmp/none.gguf" "$tmp/m.json"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
