#!/usr/bin/env sh
# find-nccl.sh — print the path of an NCCL library for WICK_NCCL_LIB when
# the loader has none: the one PyTorch's wheels carry (nvidia-nccl), else
# the first libnccl.so.2 on the machine. Prints nothing when the loader
# finds libnccl.so.2 itself, or when WICK_NCCL_LIB is already set.
#   export WICK_NCCL_LIB=$(tools/find-nccl.sh)   (then unset it if empty)
[ -n "${WICK_NCCL_LIB:-}" ] && { echo "$WICK_NCCL_LIB"; exit 0; }
ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 ' && exit 0
p=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
[ -f "$p" ] || p=$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | head -1)
[ -f "$p" ] && echo "$p"
exit 0
