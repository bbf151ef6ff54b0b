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

mkdir -p "$TMP/bad/docs"
echo '[]' > "$TMP/empty.json"
sed 's/| DGX-B200 |/| DGX-XYZ |/' "$DATA/docs/performance-summary-archive.md" \
  > "$TMP/bad/docs/performance-summary-archive.md"
cp "$DATA/docs/performance-summary.md" "$TMP/bad/docs/"
if python3 "$TOOL" --bridge "$TMP/bad" --commit 0123abcd --runs "$TMP/empty.json" \
  > "$TMP/bad.out" 2> "$TMP/bad.err" < /dev/null; then
  fail "an unknown system was accepted"
fi
grep -q "unknown system 'DGX-XYZ'" "$TMP/bad.err" || fail "error does not name the system: $(cat "$TMP/bad.err")"
[ ! -s "$TMP/bad.out" ] || fail "rows were written before the error"
mkdir -p "$TMP/cell/docs"
sed 's/| DGX-GB300 | 256 | MXFP8 | 4096 | 2 |/| DGX-GB300 | 2x6 | MXFP8 | 4096 | 2 |/' \
  "$DATA/docs/performance-summary-archive.md" > "$TMP/cell/docs/performance-summary-archive.md"
cp "$DATA/docs/performance-summary.md" "$TMP/cell/docs/"
python3 "$TOOL" --bridge "$TMP/cell" --commit 0123abcd --runs "$TMP/empty.json" \
  > "$TMP/cell.out" 2> "$TMP/cell.err" && fail "a bad GPU count was accepted"
grep -q "DeepSeekV3 DGX-GB300: bad or missing cell" "$TMP/cell.err" ||
  fail "error does not name the row: $(cat "$TMP/cell.err")"
[ ! -s "$TMP/cell.out" ] || fail "rows were written before the bad cell's error"

mkdir -p "$TMP/foot/docs"
sed 's/^\[^slow-note\]:.*$//' "$DATA/docs/performance-summary-archive.md" \
  > "$TMP/foot/docs/performance-summary-archive.md"
cp "$DATA/docs/performance-summary.md" "$TMP/foot/docs/"
python3 "$TOOL" --bridge "$TMP/foot" --commit 0123abcd --runs "$TMP/empty.json" \
  > "$TMP/foot.out" 2> "$TMP/foot.err" && fail "a row citing an undefined footnote was accepted"
grep -q "footnote \[^slow-note\] is not defined" "$TMP/foot.err" ||
  fail "error does not name the footnote: $(cat "$TMP/foot.err")"
[ ! -s "$TMP/foot.out" ] || fail "rows were written before the footnote's error"

python3 "$TOOL" --bridge "$TMP/none" --commit 0123abcd --runs "$TMP/empty.json" \
  > "$TMP/none.out" 2> "$TMP/none.err" && fail "a missing checkout was accepted"
grep -q "no docs/performance-summary-archive.md" "$TMP/none.err" ||
  fail "error does not name the missing page: $(cat "$TMP/none.err")"
echo PASS
