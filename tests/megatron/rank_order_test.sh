#!/bin/bash
# moetune's rank-order rule (predict --dp-outermost) against Megatron-LM's
# own RankGenerator (rank_order_check.py says what is compared). Needs
# /usr/bin/python3 and the shared tree beside the repository (../shared:
# third_party/megatron-lm), or MOETUNE_SHARED naming it. Missing either is a
# failure, not a skip.
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")}/${TEST_WORKSPACE:-moetune}"
BIN="$RUNFILES/tools/moetune"
HERE="$RUNFILES/tests/megatron"
if [ -z "${MOETUNE_SHARED:-}" ]; then
  # Runfiles are links into the source tree: the repository is three levels
  # above the real script, and shared/ sits beside it.
  REPO="$(dirname "$(dirname "$(dirname "$(readlink -f "$HERE/rank_order_check.py")")")")"
  MOETUNE_SHARED="$(dirname "$REPO")/shared"
fi
if [ ! -f "$MOETUNE_SHARED/third_party/megatron-lm/megatron/core/parallel_state.py" ]; then
  echo "FAIL: no third_party/megatron-lm under $MOETUNE_SHARED (set MOETUNE_SHARED)"
  exit 1
fi
exec /usr/bin/python3 "$HERE/rank_order_check.py" "$BIN" "$MOETUNE_SHARED"
