#!/bin/bash
# tools/extract_bridge_tables.py on a small fixture of the Megatron-Bridge
# performance pages (tools/testdata/bridge_tables): the rows it writes are the
# golden file's (26.x pre-training and SFT tables, models with a preset, rows
# runs.json holds left out, footnote markers stripped from the cells and the
# footnotes cited kept with the row, a known-regression footnote marking it,
# the FSDP column kept in the notes), and a table row of a system it does not
# know, a cell that is not a number, a footnote the page does not define or a
# missing checkout is an error that names it and writes nothing.
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")/..}/${TEST_WORKSPACE:-moetune}"
TOOL="$RUNFILES/tools/extract_bridge_tables.py"
DATA="$RUNFILES/tools/testdata/bridge_tables"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

python3 "$TOOL" --bridge "$DATA" --commit 0123abcd --runs "$DATA/runs.json" > "$TMP/out.json" ||
  fail "extractor exited $? on the fixture"
diff -u "$DATA/expected.json" "$TMP/out.json" || fail "rows differ from expected.json"

echo '[]' > "$TMP/empty.json"
# expect_error NAME SED WHAT MESSAGE: the fixture's archive page edited by SED
# must make the extractor fail with MESSAGE on stderr and write no rows.
expect_error() {
  local name="$1" edit="$2" what="$3" message="$4"
  mkdir -p "$TMP/$name/docs"
  sed "$edit" "$DATA/docs/performance-summary-archive.md" \
    > "$TMP/$name/docs/performance-summary-archive.md"
  cp "$DATA/docs/performance-summary.md" "$TMP/$name/docs/"
  if python3 "$TOOL" --bridge "$TMP/$name" --commit 0123abcd --runs "$TMP/empty.json" \
    > "$TMP/$name.out" 2> "$TMP/$name.err" < /dev/null; then
    fail "$what was accepted"
  fi
  grep -qF "$message" "$TMP/$name.err" || fail "$what: error lacks '$message': $(cat "$TMP/$name.err")"
  [ ! -s "$TMP/$name.out" ] || fail "$what: rows were written before the error"
}
expect_error bad 's/| DGX-B200 |/| DGX-XYZ |/' "an unknown system" "unknown system 'DGX-XYZ'"
expect_error cell 's/| DGX-GB300 | 256 | MXFP8 | 4096 | 2 |/| DGX-GB300 | 2x6 | MXFP8 | 4096 | 2 |/' \
  "a bad GPU count" "DeepSeekV3 DGX-GB300: bad or missing cell"
expect_error foot 's/^\[^slow-note\]:.*$//' "a row citing an undefined footnote" \
  "footnote [^slow-note] is not defined"

python3 "$TOOL" --bridge "$TMP/none" --commit 0123abcd --runs "$TMP/empty.json" \
  > "$TMP/none.out" 2> "$TMP/none.err" && fail "a missing checkout was accepted"
grep -q "no docs/performance-summary-archive.md" "$TMP/none.err" ||
  fail "error does not name the missing page: $(cat "$TMP/none.err")"
echo PASS
