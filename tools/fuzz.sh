#!/usr/bin/env bash
# libFuzzer targets for the parsers of outside data, built with clang++ (and
# its runtime from Debian's libclang-rt-14-dev) outside Bazel:
#   model_spec   planner model parsers (HF config.json, native JSON)
#   cluster      planner cluster JSON parser
#   fix_spec     the search's --fix knob strings
#   measurement  the server's probe-result validator (protobuf bytes)
# Each runs for FUZZ_SECONDS (default 20) from its checked-in seed corpus
# (tests/fuzz/corpus/NAME) plus any regression inputs
# (tests/fuzz/regressions/NAME); a crash, leak or timeout fails the script and
# leaves the input under $FUZZ_OUT/artifacts (add it to
# tests/fuzz/regressions/NAME, fix the bug, and it is replayed on every run).
#
#   tools/fuzz.sh                    # build + fuzz every target, FUZZ_SECONDS each
#   tools/fuzz.sh --replay           # build + run the seeds and regressions once
#   FUZZ_SECONDS=300 tools/fuzz.sh model_spec
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-20}
OUT=${FUZZ_OUT:-/tmp/moetune-fuzz}
CXX=${FUZZ_CXX:-clang++-14}
REPLAY=0
TARGETS=()
for a in "$@"; do
  case "$a" in
    --replay) REPLAY=1 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) TARGETS+=("$a") ;;
  esac
done
((${#TARGETS[@]})) || TARGETS=(model_spec cluster fix_spec measurement)

command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }
mkdir -p "$OUT/obj" "$OUT/gen" "$OUT/bin" "$OUT/artifacts"

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CXXFLAGS="-std=c++17 -g -O1 -fno-omit-frame-pointer $SAN -I. -I$OUT/gen $(pkg-config --cflags protobuf)"
LIBS="$(pkg-config --libs protobuf absl_status absl_statusor absl_strings absl_str_format) -lpthread"

protoc -I. --cpp_out="$OUT/gen" proto/common.proto
# planner/BUILD.bazel's embedded_json genrules (model and cluster presets),
# done by hand.
mkdir -p "$OUT/gen/planner/internal"
embed() {  # embed DIR NAME: planner/data/DIR/*.json -> planner/internal/NAME.inc
  (for f in planner/data/"$1"/*.json; do
     printf '{"%s", R"moetune_json(' "$(basename "$f" .json)"; cat "$f"; printf ')moetune_json"},\n'
   done) > "$OUT/gen/planner/internal/$2.inc.tmp"
  cmp -s "$OUT/gen/planner/internal/$2.inc.tmp" "$OUT/gen/planner/internal/$2.inc" ||
    mv "$OUT/gen/planner/internal/$2.inc.tmp" "$OUT/gen/planner/internal/$2.inc"
}
embed models model_presets
embed clusters cluster_presets

# Sources per target (the libraries of planner/ and server/ they exercise).
PLANNER_BASE="planner/model_spec.cc planner/internal/model_presets.cc planner/precision.cc"
HARDWARE="planner/hardware.cc planner/internal/cluster_presets.cc"
declare -A SRCS=(
  [model_spec]="$PLANNER_BASE"
  [cluster]="$HARDWARE planner/precision.cc"
  [fix_spec]="$PLANNER_BASE $HARDWARE planner/training_config.cc planner/search_space.cc"
  [measurement]="$OUT/gen/proto/common.pb.cc server/measurement_validator.cc server/limits.cc"
)

# Compiles a source once (objects are reused across targets and runs).
obj() {
  local src=$1 o
  o="$OUT/obj/$(echo "$src" | tr '/' '_').o"
  if [[ ! -f "$o" || "$src" -nt "$o" ]]; then
    echo "fuzz: compiling $src" >&2
    $CXX $CXXFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$o"
  fi
  echo "$o"
}

status=0
for t in "${TARGETS[@]}"; do
  [[ -n "${SRCS[$t]+x}" ]] || { echo "fuzz: unknown target $t"; exit 2; }
  objs=()
  for s in ${SRCS[$t]}; do objs+=("$(obj "$s")"); done
  bin="$OUT/bin/${t}_fuzzer"
  $CXX $CXXFLAGS -fsanitize=fuzzer "tests/fuzz/${t}_fuzzer.cc" "${objs[@]}" $LIBS -o "$bin"

  seeds="tests/fuzz/corpus/$t"
  regress="tests/fuzz/regressions/$t"
  dirs=("$seeds")
  [[ -d "$regress" ]] && dirs+=("$regress")
  dict=()
  [[ "$t" == model_spec || "$t" == cluster ]] && dict=(-dict=tests/fuzz/json.dict)
  common=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536
          "-artifact_prefix=$OUT/artifacts/$t-" "${dict[@]}")
  if ((REPLAY)); then
    echo "fuzz: $t: replaying $(cat <(ls "${dirs[@]}") | wc -l) inputs"
    inputs=()
    for d in "${dirs[@]}"; do inputs+=("$d"/*); done
    "$bin" "${common[@]}" -runs=0 "${inputs[@]}" >"$OUT/$t.log" 2>&1 || { status=1; tail -30 "$OUT/$t.log"; }
  else
    work="$OUT/corpus/$t"   # grows across runs; the checked-in seeds stay as they are
    ci=()
    if [[ "${CI:-}" == "true" ]]; then
      # CI must not turn red on a path no developer run has explored: a fixed
      # seed, a fresh corpus and a bounded run count make CI's exploration a
      # prefix of `CI=true tools/fuzz.sh`, which is run before committing.
      work="$(mktemp -d "$OUT/ci-corpus.XXXXXX")"
      ci=(-seed=1 -runs="${FUZZ_RUNS:-200000}")
    fi
    mkdir -p "$work"
    echo "fuzz: $t: ${FUZZ_SECONDS}s from $(ls "${dirs[@]}" | wc -l) seeds"
    if "$bin" "${common[@]}" "${ci[@]}" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
        "$work" "${dirs[@]}" >"$OUT/$t.log" 2>&1; then
      grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$OUT/$t.log" | tr '\n' ' '; echo
    else
      status=1
      echo "fuzz: $t FAILED; input kept under $OUT/artifacts/"
      tail -40 "$OUT/$t.log"
    fi
  fi
done
exit $status
