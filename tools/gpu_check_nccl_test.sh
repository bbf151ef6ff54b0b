#!/usr/bin/env bash
# tools/gpu_check.sh picks the newest NCCL among its candidates (not the pip
# one first) and says which: fake toolkit and pip trees with nccl.h headers
# of chosen versions, a fake python3 that reports the pip tree, --print-nccl.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/gpu_check.sh"
[[ -f "$script" ]] || script="$TEST_SRCDIR/$TEST_WORKSPACE/tools/gpu_check.sh"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/nccl.XXXXXX")"

make_nccl() {  # root major minor patch libdir libname
  mkdir -p "$1/include" "$1/$5"
  printf '#define NCCL_MAJOR %s\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n' "$2" "$3" "$4" > "$1/include/nccl.h"
  : > "$1/$5/$6"
}
mkdir -p "$tmp/cuda/bin" "$tmp/bin"
printf '#!/bin/sh\nexit 0\n' > "$tmp/cuda/bin/nvcc"
chmod +x "$tmp/cuda/bin/nvcc"
printf '#!/bin/sh\necho %s\n' "$tmp/pip/nvidia/nccl" > "$tmp/bin/python3"
chmod +x "$tmp/bin/python3"
cp "$tmp/bin/python3" "$tmp/bin/python"

unset CUDA_HOME NCCL_HOME
export GPU_CHECK_NCCL_SYSTEM_DIRS=""  # only the fake trees
run() { PATH="$tmp/bin:$PATH" NVCC="$tmp/cuda/bin/nvcc" bash "$script" --print-nccl 2>/dev/null; }
fail() { echo "FAIL: $*"; exit 1; }

# 1. pip 2.27.3 (listed first) vs toolkit 2.28.9: the toolkit's wins.
make_nccl "$tmp/pip/nvidia/nccl" 2 27 3 lib libnccl.so.2
make_nccl "$tmp/cuda" 2 28 9 lib64 libnccl.so
out="$(run)"
echo "$out"
[[ "$out" == *"NCCL 2.28.9 from $tmp/cuda/lib64/libnccl.so"* ]] || fail "expected the toolkit's 2.28.9: $out"
[[ "$out" == *"all-to-all via ncclAlltoAll"* ]] || fail "expected ncclAlltoAll: $out"

# 2. A newer pip NCCL (2.29.1) wins over the toolkit's.
make_nccl "$tmp/pip/nvidia/nccl" 2 29 1 lib libnccl.so.2
out="$(run)"
echo "$out"
[[ "$out" == *"NCCL 2.29.1 from $tmp/pip/nvidia/nccl/lib/libnccl.so.2"* ]] || fail "expected pip's 2.29.1: $out"

# 3. NCCL_HOME is used as given, and an old one says how all-to-all is done.
make_nccl "$tmp/old" 2 21 5 lib libnccl.so
out="$(PATH="$tmp/bin:$PATH" NVCC="$tmp/cuda/bin/nvcc" NCCL_HOME="$tmp/old" bash "$script" --print-nccl 2>/dev/null)"
echo "$out"
[[ "$out" == *"NCCL 2.21.5 from $tmp/old/lib/libnccl.so"* ]] || fail "expected NCCL_HOME's 2.21.5: $out"
[[ "$out" == *"grouped ncclSend/ncclRecv"* ]] || fail "expected the send/recv all-to-all: $out"
echo PASS
