#!/bin/bash
# MaxText's validation, restated, on every plan of matrix.txt (check_plans.py
# says what is checked and what it mirrors). Needs Debian's python3 with
# python3-yaml (tools/setup.sh installs it); a missing module is a failure,
# not a skip. JAX and MaxText are not run.
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")}/${TEST_WORKSPACE:-moetune}"
BIN="$RUNFILES/tools/moetune"
HERE="$RUNFILES/tests/maxtext"
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 lacks yaml (run tools/setup.sh)"
  exit 1
fi
WORK="${TEST_TMPDIR:-$(mktemp -d)}/plans"
mkdir -p "$WORK"
exec /usr/bin/python3 "$HERE/check_plans.py" "$BIN" "$HERE/matrix.txt" \
  "$HERE/maxtext_e591f30.json" "$WORK"
