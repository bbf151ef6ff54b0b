#!/bin/bash
# tools/audit_bridge_presets.py on a fixture of two release tags' presets
# (tools/testdata/bridge_presets): which rows publish a layout their tag's
# presets set (a replace() chain, an alias, the FSDP column read from the
# notes), which only another tag's, which none (a keyword that is not a
# literal matches nothing; an FP8 row never takes an FP8_MX preset's layout); the annotated rows are the golden file's; a
# preset replacing one not defined above it, a tag without
# WorkloadBaseConfig, or a bad --tag-dir is an error that names it and
# writes nothing.
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")/..}/${TEST_WORKSPACE:-moetune}"
TOOL="$RUNFILES/tools/audit_bridge_presets.py"
DATA="$RUNFILES/tools/testdata/bridge_presets"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

cd "$DATA" || fail "no fixture at $DATA"
python3 "$TOOL" --tag-dir v0.3.0=v0.3.0 --tag-dir v0.3.1=v0.3.1 --rows rows.json \
  > "$TMP/report.txt" || fail "audit exited $? on the fixture"
diff -u expected_report.txt "$TMP/report.txt" || fail "report differs from expected_report.txt"
python3 "$TOOL" --tag-dir v0.3.0=v0.3.0 --tag-dir v0.3.1=v0.3.1 \
  --annotate rows.json "$TMP/annotated.json" > /dev/null || fail "--annotate exited $?"
diff -u expected_annotated.json "$TMP/annotated.json" ||
  fail "annotated rows differ from expected_annotated.json"

# expect_error NAME FILE SED WHAT MESSAGE: v0.3.1's FILE edited by SED must
# make the audit fail with MESSAGE on stderr and write no annotated file.
expect_error() {
  local name="$1" file="$2" edit="$3" what="$4" message="$5"
  cp -r v0.3.1 "$TMP/$name"
  sed -i "$edit" "$TMP/$name/$file"
  if python3 "$TOOL" --tag-dir v0.3.0=v0.3.0 --tag-dir "v0.3.1=$TMP/$name" \
    --annotate rows.json "$TMP/$name.json" > /dev/null 2> "$TMP/$name.err"; then
    fail "$what was accepted"
  fi
  grep -qF "$message" "$TMP/$name.err" || fail "$what: error lacks '$message': $(cat "$TMP/$name.err")"
  [ ! -e "$TMP/$name.json" ] || fail "$what: the annotated file was written"
}
LLAMA=scripts/performance/configs/llama/llama3_workload_base_configs.py
expect_error undefined "$LLAMA" 's/^    BASE_LLAMA3_70B_CONFIG, micro_batch_size=2/    NOT_A_PRESET, micro_batch_size=2/' \
  "a replace() of an undefined preset" \
  "LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V1 replaces NOT_A_PRESET, not defined above it"
expect_error noclass scripts/performance/utils/utils.py 's/class WorkloadBaseConfig/class Other/' \
  "a tag without WorkloadBaseConfig" "no class WorkloadBaseConfig"
python3 "$TOOL" --tag-dir v0.3.0 --rows rows.json > /dev/null 2> "$TMP/arg.err" &&
  fail "a --tag-dir without '=' was accepted"
grep -qF "wants TAG=DIR" "$TMP/arg.err" || fail "bad --tag-dir: $(cat "$TMP/arg.err")"
echo PASS
