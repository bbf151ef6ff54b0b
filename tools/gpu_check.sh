#!/usr/bin/env bash
# Builds the CUDA probes with a plain nvcc command line (no Bazel) and runs
# them on this machine's GPUs: each probe is checked against a CPU reference
# on fresh random inputs, then timed; one table is printed. Exit status: 0 all
# right, 1 a wrong result or a failed call, 2 no GPU / build problem.
#
#   tools/gpu_check.sh               build, then run (about 1-3 minutes)
#   tools/gpu_check.sh --build-only  build only (what a machine without a GPU can do)
#   tools/gpu_check.sh --print-nccl  print which NCCL (version, library) it would use, and stop
#   tools/gpu_check.sh --quick       fewer sizes and iterations
#   tools/gpu_check.sh --json=/tmp/r.jsonl   also write every result as JSON
#   tools/gpu_check.sh --markdown=docs/measurements/2026-12-01-h200-8x.md   the headline table
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# NCCL_HOME (where include/nccl.h and lib*/libnccl.so* are; default: the
# newest of the Python package nvidia-nccl-cu13/-cu12, the CUDA toolkit, /usr
# and /usr/local), GPU_CHECK_ARCH (nvcc arch flags; default: -arch=native when a GPU is
# visible, else sm_90 + sm_100 cubins and compute_100 PTX),
# GPU_CHECK_NCCL_SYSTEM_DIRS (the system roots searched for NCCL; default
# "/usr /usr/local"), GPU_CHECK_OUT (build directory; default ${TMPDIR:-/tmp}/moetune-gpu-check).
set -euo pipefail
cd "$(dirname "$0")/.."

build_only=0 print_nccl=0
run_args=()
for a in "$@"; do
  case "$a" in
    --build-only) build_only=1 ;;
    --print-nccl) print_nccl=1 ;;
    *) run_args+=("$a") ;;
  esac
done

NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
if [[ ! -x "$NVCC" ]]; then
  echo "gpu_check: nvcc not found (set NVCC)" >&2
  exit 2
fi
CUDA_HOME="${CUDA_HOME:-$(cd "$(dirname "$NVCC")/.." && pwd)}"

# NCCL: header and library directories. NCCL_HOME, when set, is used as
# given. Otherwise every candidate (the Python package nvidia-nccl-cu13 /
# -cu12, the CUDA toolkit, /usr, /usr/local) with both nccl.h and libnccl is
# read for its version (NCCL_MAJOR/MINOR/PATCH in nccl.h) and the newest one
# wins: a PyTorch machine's pip NCCL is often older (2.27) than the toolkit's.
# The probes build against any NCCL 2.x (ncclAlltoAll from 2.28 on, grouped
# send/recv before: kernels/cuda/nccl_group.h); the choice is printed.
nccl_version_of() {  # prints MAJOR.MINOR.PATCH of $1/include/nccl.h
  awk '/^#define NCCL_(MAJOR|MINOR|PATCH) /{v[$2]=$3} END{if (v["NCCL_MAJOR"]!="") printf "%d.%d.%d\n", v["NCCL_MAJOR"], v["NCCL_MINOR"], v["NCCL_PATCH"]}' "$1/include/nccl.h" 2>/dev/null
}
nccl_lib_of() {  # prints "LIBDIR NAME" of the first libnccl under $1
  local root="$1" libdir name
  for libdir in "$root/lib" "$root/lib64" "$root/lib/x86_64-linux-gnu" "$root/targets/x86_64-linux/lib" \
                "$root/targets/sbsa-linux/lib" "$root/lib/aarch64-linux-gnu"; do
    for name in libnccl.so libnccl.so.2; do
      if [[ -e "$libdir/$name" ]]; then echo "$libdir $name"; return 0; fi
    done
  done
  return 1
}
nccl_candidates=()
if [[ -n "${NCCL_HOME:-}" ]]; then
  nccl_candidates=("$NCCL_HOME")
else
  for py in python3 python; do
    if command -v "$py" >/dev/null 2>&1; then
      d="$("$py" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
      [[ -n "$d" ]] && nccl_candidates+=("$d")
    fi
  done
  nccl_candidates+=("$CUDA_HOME")
  read -r -a system_dirs <<<"${GPU_CHECK_NCCL_SYSTEM_DIRS-/usr /usr/local}"
  nccl_candidates+=("${system_dirs[@]+"${system_dirs[@]}"}")
fi
NCCL_INC="" NCCL_LIB="" NCCL_LIBNAME="" NCCL_VERSION="" best_key=-1
for root in "${nccl_candidates[@]}"; do
  [[ -f "$root/include/nccl.h" ]] || continue
  lib="$(nccl_lib_of "$root")" || continue
  ver="$(nccl_version_of "$root")"
  [[ -n "$ver" ]] || ver=0.0.0
  IFS=. read -r vmaj vmin vpat <<<"$ver"
  key=$(( vmaj * 1000000 + vmin * 1000 + vpat ))
  echo "gpu_check: candidate NCCL $ver in $root" >&2
  if (( key > best_key )); then
    best_key=$key NCCL_VERSION="$ver" NCCL_INC="$root/include"
    NCCL_LIB="${lib% *}" NCCL_LIBNAME="${lib#* }"
  fi
done
if [[ -z "$NCCL_INC" ]]; then
  echo "gpu_check: nccl.h + libnccl.so not found in: ${nccl_candidates[*]} (set NCCL_HOME)" >&2
  exit 2
fi
alltoall="ncclAlltoAll"
(( best_key < 2028000 )) && alltoall="grouped ncclSend/ncclRecv (NCCL < 2.28 has no ncclAlltoAll)"
echo "gpu_check: NCCL $NCCL_VERSION from $NCCL_LIB/$NCCL_LIBNAME (headers $NCCL_INC); all-to-all via $alltoall"
[[ $print_nccl == 1 ]] && exit 0

gpu_visible=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu_visible=1; fi
if [[ -n "${GPU_CHECK_ARCH:-}" ]]; then
  read -r -a arch <<<"$GPU_CHECK_ARCH"
elif [[ $gpu_visible == 1 ]]; then
  arch=(-arch=native)
else
  arch=(-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_100,code=sm_100
        -gencode=arch=compute_100,code=compute_100)
fi

OUT="${GPU_CHECK_OUT:-${TMPDIR:-/tmp}/moetune-gpu-check}"
mkdir -p "$OUT"
# The GPU probes and the std-only core they use: no Abseil, gRPC or Bazel.
srcs=(
  kernels/cuda/gpu_check_main.cu
  kernels/cuda/cuda_probes.cu kernels/cuda/grouped_gemm.cu kernels/cuda/dispatch_combine.cu
  kernels/cuda/collectives.cu kernels/cuda/nccl_group.cu kernels/cuda/offload.cu
  kernels/probe_status.cc kernels/probe_types.cc kernels/probe_result.cc kernels/dispatch_plan.cc
  kernels/reference.cc kernels/rendezvous.cc kernels/block_scale_layout.cc kernels/check_outcome.cc kernels/check_summary.cc
  kernels/group_agreement.cc
)
if [[ "$NCCL_LIBNAME" == libnccl.so ]]; then nccl_link=(-lnccl); else nccl_link=(-l:"$NCCL_LIBNAME"); fi
compile=("$NVCC" -std=c++17 -O3 "${arch[@]}" -Xcompiler -Wall,-Wextra -I. -I"$NCCL_INC" -x cu -c)
link=("$NVCC" "${arch[@]}" -o "$OUT/gpu_check" -L"$CUDA_HOME/lib64" -lcublasLt -lcublas -L"$NCCL_LIB"
      "${nccl_link[@]}" -Xlinker -rpath="$NCCL_LIB" -Xlinker -rpath="$CUDA_HOME/lib64")
echo "gpu_check: compile each of ${srcs[*]} with: ${compile[*]} SRC -o OBJ"
start=$(date +%s)
# One nvcc per source, in parallel (nproc at a time), then one link.
jobs_max="$(nproc 2>/dev/null || echo 4)"
pids=() objs=()
for src in "${srcs[@]}"; do
  obj="$OUT/$(basename "${src%.*}").o"
  objs+=("$obj")
  "${compile[@]}" "$src" -o "$obj" &
  pids+=($!)
  while (( $(jobs -rp | wc -l) >= jobs_max )); do wait -n; done
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
if [[ $status != 0 ]]; then
  echo "gpu_check: compilation failed" >&2
  exit 2
fi
echo "gpu_check: link: ${link[*]} OBJS"
"${link[@]}" "${objs[@]}"
echo "gpu_check: built $OUT/gpu_check in $(( $(date +%s) - start )) s"
[[ $build_only == 1 ]] && exit 0

exec "$OUT/gpu_check" "${run_args[@]+"${run_args[@]}"}"
