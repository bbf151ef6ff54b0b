#!/usr/bin/env bash
# Builds everything and runs every test. Exits non-zero on any failure.
#   1. installs missing Debian packages (tools/setup.sh);
#   2. builds the whole tree as a machine without CUDA would (toolkit hidden):
#      GPU code is replaced by implementations that report Unimplemented;
#   3. fuzzes the parsers of outside data for a bounded time (tools/fuzz.sh);
#   4. builds the whole tree with CUDA (when the toolkit is present) and runs
#      `bazel test //...`; Bazel's summary line ends the output.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== test.sh: checking dependencies"
tools/setup.sh

echo "== test.sh: bazel build //... with the CUDA toolkit hidden (MOETUNE_CUDA_PATH=/nonexistent)"
bazel build --repo_env=MOETUNE_CUDA_PATH=/nonexistent //...
echo "== test.sh: kernels tests without CUDA (GPU probes must answer Unimplemented)"
bazel test --repo_env=MOETUNE_CUDA_PATH=/nonexistent //kernels/...

# --- fuzzing (owner: reliability/security, issue 7) ---
# libFuzzer targets of the model/cluster/--fix parsers and the probe-result
# validator, built with clang++ outside Bazel (tools/fuzz.sh), each fuzzed for
# FUZZ_SECONDS (20) from tests/fuzz/corpus plus the replayed regressions.
echo "== test.sh: fuzzing, ${FUZZ_SECONDS:-20} s per target (tools/fuzz.sh)"
tools/fuzz.sh
# --- end fuzzing ---

echo "== test.sh: bazel test //... (CUDA toolkit: ${MOETUNE_CUDA_PATH:-/usr/local/cuda})"
# --nocache_test_results: every test really runs on every call (the disk cache
# would otherwise serve earlier results and CI would execute nothing).
bazel test --nocache_test_results //...
