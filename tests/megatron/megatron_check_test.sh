#!/bin/bash
# Megatron-LM's own argument parser, validate_args and start-up checks on
# every plan of matrix.txt (check_plans.py says what is checked), or with
# --random SEED COUNT on COUNT plans random_matrix.py draws. Needs
# Debian's python3 with python3-torch python3-numpy python3-packaging
# python3-yaml (tools/setup.sh installs them) and the shared tree beside the
# repository (../shared: tools/megatron_check.py, third_party/megatron-lm),
# or MOETUNE_SHARED naming it. Missing either is a failure, not a skip.
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")}/${TEST_WORKSPACE:-moetune}"
BIN="$RUNFILES/tools/moetune"
HERE="$RUNFILES/tests/megatron"
if [ -z "${MOETUNE_SHARED:-}" ]; then
  # Runfiles are links into the source tree: the repository is three levels
  # above the real matrix.txt, and shared/ sits beside it.
  REPO="$(dirname "$(dirname "$(dirname "$(readlink -f "$HERE/matrix.txt")")")")"
  MOETUNE_SHARED="$(dirname "$REPO")/shared"
fi
if [ ! -f "$MOETUNE_SHARED/tools/megatron_check.py" ]; then
  echo "FAIL: no megatron_check.py under $MOETUNE_SHARED/tools (set MOETUNE_SHARED)"
  exit 1
fi
if ! /usr/bin/python3 -c 'import torch, numpy, packaging, yaml' 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 lacks torch/numpy/packaging/yaml (run tools/setup.sh)"
  exit 1
fi
WORK="${TEST_TMPDIR:-$(mktemp -d)}/plans"
mkdir -p "$WORK"
MATRIX="$HERE/matrix.txt"
if [ "${1:-}" = "--random" ]; then
  # A drawn matrix instead of the chosen one: --random SEED COUNT.
  MATRIX="$WORK/random_matrix.txt"
  /usr/bin/python3 "$HERE/random_matrix.py" "$BIN" "$2" "$3" "$MATRIX" || exit 1
fi
exec /usr/bin/python3 "$HERE/check_plans.py" "$BIN" "$MATRIX" "$MOETUNE_SHARED" "$WORK"
