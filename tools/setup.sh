#!/usr/bin/env bash
# Installs what moetune needs to build and test on Debian 12, if missing.
# Idempotent: does nothing (and needs no network) when everything is present.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-rules-java pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3 libgloo-dev libopenblas-dev chromium
  clang libclang-rt-14-dev  # libFuzzer + sanitizers for tools/fuzz.sh
  # Megatron-LM's own checks on emitted plans (tests/megatron):
  python3-torch python3-numpy python3-packaging python3-yaml
  # the planner API from Python (tests/python_client):
  python3-grpcio python3-protobuf
  ${MOETUNE_EXTRA_PACKAGES:-}
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
