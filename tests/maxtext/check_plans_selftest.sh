#!/bin/bash
# check_plans.py's checks fail on broken MaxText configs (check_plans_selftest.py).
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")}/${TEST_WORKSPACE:-moetune}"
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 lacks yaml (run tools/setup.sh)"
  exit 1
fi
exec /usr/bin/python3 "$RUNFILES/tests/maxtext/check_plans_selftest.py" \
  "$RUNFILES/tests/maxtext/maxtext_e591f30.json" \
  "$RUNFILES/planner/testdata/golden/deepseek_v3_gb200_128_maxtext.maxtext.yaml"
