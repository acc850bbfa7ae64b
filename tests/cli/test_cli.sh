#!/usr/bin/env bash
# test_cli.sh — the `wick` command line as a newcomer meets it: exit
# statuses (0 success, 2 a bad command line), `wick info` on a machine
# without GPUs (one short line per GPU kind, the loader's words only under
# -v), a plugin named in the environment that cannot be loaded, and a bad
# WICK_NUM_THREADS (a warning, not silence). Usage: test_cli.sh path/to/wick
# Ends with "N passed, N failed"; exits 1 on any failure.
set -u
wick=${1:-build/wick}
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL cli/$1: $2"; }
# expect NAME STATUS CMD...: the command exits with STATUS
expect() {
  local name=$1 want=$2; shift 2
  "$@" > /tmp/wick-cli-out.$$ 2> /tmp/wick-cli-err.$$
  local rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else bad "$name" "exit $rc, expected $want"; fi
}
out() { cat /tmp/wick-cli-out.$$; }
err() { cat /tmp/wick-cli-err.$$; }

expect no_args 2 "$wick"
err | grep -q "usage: wick" && ok || bad no_args_usage "no usage on stderr"
expect unknown_command 2 "$wick" frobnicate
expect version 0 "$wick" version
out | grep -qE '^wick [0-9]+\.[0-9]+\.[0-9]+$' && ok || bad version_text "printed '$(out)'"
expect version_extra_arg 2 "$wick" version --x
expect info_extra_arg 2 "$wick" info extra
expect help 0 "$wick" help
expect help_unknown 2 "$wick" help frobnicate
expect info 0 "$wick" info
out | grep -q "cannot open shared object file" && bad info_short "loader messages without -v" || ok
for k in cuda rocm; do
  if out | grep -qE "^  $k:[0-9]"; then ok; ok; continue; fi       # devices found: listed as kind:N
  line=$(out | grep -E "^  $k ")
  [ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] && ok || bad "info_${k}_one_line" "'$line'"
  printf '%s' "$line" | grep -qE "no devices found|not built|no driver|^  $k +[a-zA-Z]" && ok || bad "info_${k}_state" "'$line'"
done
expect info_verbose 0 "$wick" info -v
# a plugin named in the environment is that file or nothing
expect env_plugin_missing 0 env WICK_CUDA_PLUGIN=/nonexistent/libwick_cuda.so "$wick" info
out | grep -qE "^  cuda +not loaded: WICK_CUDA_PLUGIN=/nonexistent/libwick_cuda.so" && ok \
  || bad env_plugin_named "'$(out | grep -E '^  cuda ')'"
# WICK_NUM_THREADS that is not a positive integer: a warning on stderr
for v in abc 0 -3 4x; do
  expect "num_threads_$v" 0 env WICK_NUM_THREADS="$v" "$wick" info
  err | grep -q "WICK_NUM_THREADS='$v' is not a positive integer" && ok || bad "num_threads_${v}_warns" "stderr: '$(err)'"
done
expect num_threads_ok 0 env WICK_NUM_THREADS=1 "$wick" info
err | grep -q WICK_NUM_THREADS && bad num_threads_ok_quiet "warned for 1" || ok
out | grep -qE "1 compute unit;" && ok || bad num_threads_ok_used "cpu line: '$(out | grep -A1 '^  cpu' | tail -1)'"
rm -f /tmp/wick-cli-out.$$ /tmp/wick-cli-err.$$
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
