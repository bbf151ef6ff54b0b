#!/bin/bash
# report_chromium_test.sh run with no chromium (nor anything else) on PATH
# must fail and say what is missing, not pass as a skip.
set -uo pipefail

out=$(PATH=/nonexistent "$BASH" planner/report/report_chromium_test.sh 2>&1)
code=$?
echo "$out"
if [[ $code -ne 1 ]]; then
  echo "FAIL: report_chromium_test.sh without chromium exited $code, expected 1"
  exit 1
fi
if [[ $out != *"FAIL: chromium not installed"*"tools/setup.sh"* ]]; then
  echo "FAIL: the message does not name chromium and tools/setup.sh"
  exit 1
fi
echo "PASS"
