#!/bin/bash
# Issue 16's done criteria that the model meets on the public rows
# (tests/validate.cc --check: cross-validated MAPE <= 10% per scheme, 80%
# interval coverage 70-90% per scheme, layout order >= 85%, the DeepSeek-V3
# ladder's cumulative gain within 10%, shipped constants and interval table
# equal to what the data give, and at least 70% of the held-out recipe runs
# inside `moetune predict`'s own 80% interval; on the Megatron-Bridge table rows
# runs.json does not hold, tests/data/bridge_tables_heldout.json, MAPE <= 12%
# through `moetune predict` and layout order >= 80%, issue 16's hidden-set
# targets). Needs the shared tree beside the repository
# (../shared/validation/runs.json) or MOETUNE_SHARED naming it; missing it is
# a failure, not a skip.
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")}/${TEST_WORKSPACE:-moetune}"
HERE="$RUNFILES/tests"
if [ -z "${MOETUNE_SHARED:-}" ]; then
  # Runfiles are links into the source tree: the repository is two levels
  # above the real script, and shared/ sits beside it.
  REPO="$(dirname "$(dirname "$(readlink -f "$HERE/accuracy_criteria_test.sh")")")"
  MOETUNE_SHARED="$(dirname "$REPO")/shared"
fi
RUNS="$MOETUNE_SHARED/validation/runs.json"
if [ ! -f "$RUNS" ]; then
  echo "FAIL: no $RUNS (set MOETUNE_SHARED)"
  exit 1
fi
OUT="${TEST_UNDECLARED_OUTPUTS_DIR:-${TEST_TMPDIR:-/tmp}}/validate.txt"
"$HERE/validate" --runs "$RUNS" --heldout_runs "$HERE/data/bridge_tables_heldout.json" --check > "$OUT" 2>&1
rc=$?
grep -E "CHECK FAILED|^== --check|^  leave-one-.*-out \(|coverage on held-out|Layout ranking, stack megatron-core-2026, shipped|cumulative: measured|all held-out runs: |headline scheme    rows|predict, balanced  rows|Layout ranking, runs.json and the held-out|expected [0-9]+ criteria" "$OUT"
if [ $rc -ne 0 ]; then
  echo "FAIL: validate --check exited $rc (full output: $OUT)"
  tail -20 "$OUT"
  exit 1
fi
# A held-out file that repeats a runs.json row is refused, naming the row.
DUP="${TEST_TMPDIR:-/tmp}/heldout_with_a_runs_row.json"
python3 - "$HERE/data/bridge_tables_heldout.json" "$RUNS" "$DUP" <<'PY'
import json, sys
heldout, runs = (json.load(open(f)) for f in sys.argv[1:3])
json.dump(heldout + [runs[0]], open(sys.argv[3], "w"))
print("repeated row:", runs[0]["id"])
PY
"$HERE/validate" --runs "$RUNS" --heldout_runs "$DUP" --cv=false > "$OUT.dup" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q "is also in .*held-out rows must be new" "$OUT.dup"; then
  echo "FAIL: a held-out file repeating a runs.json row gave rc $rc"
  tail -5 "$OUT.dup"
  exit 1
fi
# Under --recompute_from=recipe a held-out row takes the recompute its own
# release-tag preset sets (preset_audit, tools/audit_bridge_presets.py); a
# module name the planner does not know is refused for that row, naming it.
BAD="${TEST_TMPDIR:-/tmp}/heldout_with_a_bad_preset_module.json"
python3 - "$HERE/data/bridge_tables_heldout.json" "$BAD" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
row = next(r for r in rows if r.get("preset_audit", {}).get("own_tag_preset_knobs", {})
           .get("recompute_modules"))
row["preset_audit"]["own_tag_preset_knobs"]["recompute_modules"] = ["not_a_module"]
json.dump([row], open(sys.argv[2], "w"))
PY
"$HERE/validate" --runs "$RUNS" --heldout_runs "$BAD" --cv=false --recompute_from=recipe \
  > "$OUT.bad" 2>&1
if ! grep -q "no prediction: preset_audit.own_tag_preset_knobs.recompute_modules: .*not_a_module" \
  "$OUT.bad"; then
  echo "FAIL: an unknown preset recompute module was not refused by name"
  grep -n "no prediction\|Held out" "$OUT.bad" | head -5
  exit 1
fi
echo "PASS"
