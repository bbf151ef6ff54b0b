#!/bin/bash
# Renders the fixture report in headless Chromium and checks that the
# screenshot is a real PNG of the requested size that is not blank: many
# distinct colours and a plausible share of non-white pixels. A blank page is
# screenshot too, as a control that the check can fail.
# Fails (exit 1, "FAIL: ..." on stdout) when chromium or python3 is missing:
# a page nobody rendered is not a pass. tools/setup.sh installs both.
set -euo pipefail

missing() { echo "FAIL: $1 not installed, so the report was not rendered (run tools/setup.sh, or apt-get install $2)"; exit 1; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || missing chromium chromium
PY=$(command -v python3 || true)
[[ -n $PY ]] || missing python3 python3

HERE=planner/report
WRITER=$HERE/write_fixture_report
STATS=$HERE/png_stats.py
[[ -x $WRITER ]] || { echo "FAIL: $WRITER missing (run under bazel test)"; exit 1; }
TMP=${TEST_TMPDIR:-$(mktemp -d)}
export HOME=$TMP  # chromium writes under $HOME

shoot() {  # shoot HTML PNG
  local profile
  profile=$(mktemp -d "$TMP/profile.XXXXXX")
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$profile" \
    --window-size=1280,2000 --screenshot="$2" "file://$1" >"$TMP/chromium.log" 2>&1 || {
      echo "FAIL: chromium exited with $?"; cat "$TMP/chromium.log"; exit 1; }
  [[ -s $2 ]] || { echo "FAIL: no screenshot at $2"; cat "$TMP/chromium.log"; exit 1; }
}

"$WRITER" "$TMP/report.html"
shoot "$TMP/report.html" "$TMP/report.png"
stats=$("$PY" "$STATS" "$TMP/report.png")
echo "report screenshot: $stats"

printf '<!DOCTYPE html><html><body style="background:#fff"></body></html>' >"$TMP/blank.html"
shoot "$TMP/blank.html" "$TMP/blank.png"
blank=$("$PY" "$STATS" "$TMP/blank.png")
echo "blank control: $blank"

"$PY" - "$stats" "$blank" <<'PYEOF'
import json, sys
s, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
errors = []
if (s["width"], s["height"]) != (1280, 2000):
    errors.append("report screenshot is %dx%d, not 1280x2000" % (s["width"], s["height"]))
# Charts in a dozen colours plus anti-aliased text: hundreds of colours.
if s["distinct_colors"] < 64:
    errors.append("report looks blank: %d distinct colours" % s["distinct_colors"])
if not 0.03 <= s["non_white_fraction"] <= 0.9:
    errors.append("report non-white share %.3f outside [0.03, 0.9]" % s["non_white_fraction"])
# The control must be judged blank by the same rules.
if b["distinct_colors"] >= 64 or b["non_white_fraction"] >= 0.03:
    errors.append("blank control not detected as blank: %r" % b)
if errors:
    print("FAIL: " + "; ".join(errors))
    sys.exit(1)
print("PASS")
PYEOF
