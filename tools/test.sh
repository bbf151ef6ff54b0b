#!/usr/bin/env bash
# Builds everything and runs every test. Exits non-zero on any failure.
#   1. installs missing Debian packages (tools/setup.sh);
#   2. builds the whole tree as a machine without CUDA would (toolkit hidden):
#      GPU code is replaced by implementations that report Unimplemented;
#   3. fuzzes the parsers of outside data for a bounded time (tools/fuzz.sh);
#   4. runs every test under AddressSanitizer + UndefinedBehaviorSanitizer
#      (--config=asan), and the server, agent and service tests under
#      ThreadSanitizer (--config=tsan, with tools/sanitizers' self-test);
#   5. builds the whole tree with CUDA (when the toolkit is present) and runs
#      `bazel test //...`; Bazel's summary line ends the output.
# SANITIZERS=0 skips step 4 (for a quick local run; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== test.sh: checking dependencies"
tools/setup.sh

echo "== test.sh: bazel build //... with the CUDA toolkit hidden (MOETUNE_CUDA_PATH=/nonexistent)"
bazel build --repo_env=MOETUNE_CUDA_PATH=/nonexistent //...
echo "== test.sh: kernels tests without CUDA (GPU probes must answer Unimplemented)"
bazel test --nocache_test_results --repo_env=MOETUNE_CUDA_PATH=/nonexistent //kernels/...

# --- fuzzing (owner: reliability/security, issue 7) ---
# libFuzzer targets of the model/cluster/--fix parsers and the probe-result
# validator, built with clang++ outside Bazel (tools/fuzz.sh), each fuzzed for
# FUZZ_SECONDS (20) from tests/fuzz/corpus plus the replayed regressions.
echo "== test.sh: fuzzing, ${FUZZ_SECONDS:-20} s per target (tools/fuzz.sh)"
tools/fuzz.sh
# --- end fuzzing ---

if [[ "${SANITIZERS:-1}" != 0 ]]; then
  # --nocache_test_results as below. ASan/UBSan: leaks, overflows, use after
  # free, and undefined behaviour (not recoverable: it fails the test).
  echo "== test.sh: bazel test --config=asan //... (AddressSanitizer + UndefinedBehaviorSanitizer)"
  bazel test --config=asan --nocache_test_results --test_tag_filters=-no_sanitizers //...
  # TSan: everything with threads: server, agent, the multi-process service
  # tests (their server and agent binaries are TSan builds too).
  echo "== test.sh: bazel test --config=tsan (ThreadSanitizer): server, agent, service tests"
  bazel test --config=tsan --nocache_test_results --test_tag_filters=-no_sanitizers //server/... //agent/... //tests/... \
    //tools/cli/... //tools/sanitizers:tsan_self_test
fi

echo "== test.sh: bazel test //... (CUDA toolkit: ${MOETUNE_CUDA_PATH:-/usr/local/cuda})"
# --nocache_test_results: every test really runs on every call (the disk cache
# would otherwise serve earlier results and CI would execute nothing).
bazel test --nocache_test_results //...
