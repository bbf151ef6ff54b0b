#!/bin/bash
# `moetune plan` end to end with the real binary: exit codes 0 / 2 / 3, JSON
# shape, the emitter formats, --explain, --out (atomic, nothing half-written)
# and no progress output when stderr is not a terminal.
set -u
BIN="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-moetune}/tools/moetune"
[ -x "$BIN" ] || BIN="$(dirname "$0")/../moetune"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fails=0

check() {  # check NAME EXPECTED_RC ACTUAL_RC
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: exit $3, want $2"; cat "$TMP/err" 2>/dev/null; fails=$((fails + 1))
  else
    echo "ok: $1"
  fi
}
expect_in() {  # expect_in NAME FILE PATTERN
  if ! grep -q -- "$3" "$2"; then
    echo "FAIL: $1: '$3' not in $2:"; head -c 2000 "$2"; echo; fails=$((fails + 1))
  fi
}
one_line() {  # one_line NAME FILE
  if [ "$(wc -l < "$2")" != "1" ]; then
    echo "FAIL: $1: stderr is not one line:"; cat "$2"; fails=$((fails + 1))
  fi
}

SMALL=(--model llama3-8b --cluster h100-sxm --gpus 8 --seq 4096 --gbs 64)

# 0: a plan, as JSON with the documented keys; no progress on a non-terminal.
"$BIN" plan "${SMALL[@]}" --top 3 > "$TMP/out.json" 2> "$TMP/err"
check "json plan" 0 $?
for key in '"best"' '"top"' '"pareto"' '"candidates_evaluated"' \
           '"candidates_feasible"' '"pruned"' '"search_seconds"' \
           '"tokens_per_sec_per_gpu"' '"breakdown"' '"config"'; do
  expect_in "json key $key" "$TMP/out.json" "$key"
done
if [ -s "$TMP/err" ]; then echo "FAIL: stderr not empty in JSON mode:"; cat "$TMP/err"; fails=$((fails + 1)); fi

# 0: the emitter formats.
"$BIN" plan "${SMALL[@]}" --format megatron > "$TMP/out.sh" 2> "$TMP/err"
check "megatron" 0 $?
expect_in "megatron flags" "$TMP/out.sh" "--tensor-model-parallel-size"
expect_in "megatron array" "$TMP/out.sh" "MEGATRON_ARGS=("
bash -n "$TMP/out.sh" || { echo "FAIL: megatron output is not valid bash"; fails=$((fails + 1)); }
"$BIN" plan "${SMALL[@]}" --framework maxtext --format maxtext > "$TMP/out.yaml" 2> "$TMP/err"
check "maxtext" 0 $?
expect_in "maxtext keys" "$TMP/out.yaml" "^ici_tensor_parallelism:"
expect_in "maxtext xla" "$TMP/out.yaml" "XLA_FLAGS"
# A Megatron plan is not emitted as MaxText, nor a MaxText plan as Megatron.
"$BIN" plan "${SMALL[@]}" --format maxtext > /dev/null 2> "$TMP/err"
check "maxtext needs --framework maxtext" 2 $?
one_line "maxtext needs --framework maxtext" "$TMP/err"
"$BIN" plan "${SMALL[@]}" --framework maxtext --format megatron > /dev/null 2> "$TMP/err"
check "megatron needs --framework megatron" 2 $?
"$BIN" plan "${SMALL[@]}" --framework maxtext --format json > "$TMP/mt.json" 2> "$TMP/err"
check "maxtext json" 0 $?
expect_in "json says maxtext" "$TMP/mt.json" '"framework": "maxtext"'
"$BIN" plan "${SMALL[@]}" --framework jax > /dev/null 2> "$TMP/err"
check "bad --framework" 2 $?
one_line "bad --framework" "$TMP/err"
"$BIN" plan "${SMALL[@]}" --framework maxtext --stack 26.04 > /dev/null 2> "$TMP/err"
check "megatron stack for maxtext" 2 $?
expect_in "maxtext stack form" "$TMP/err" "maxtext-YYYY-MM-DD"
"$BIN" plan "${SMALL[@]}" --format text --explain --fix tp=1 > "$TMP/out.txt" 2> "$TMP/err"
check "text + explain + fix" 0 $?
expect_in "text layout" "$TMP/out.txt" "tp=1 "
expect_in "explain rules" "$TMP/out.txt" "invalid_layout\|over_memory\|dominated_in_group"
expect_in "text interval" "$TMP/out.txt" "80% interval"
expect_in "text memory budget" "$TMP/out.txt" "feasible (peak memory within .* = 0.94 x 79.6 GiB)"

# 0: model and cluster from files (native model JSON, cluster preset + override).
cat > "$TMP/model.json" <<'JSON'
{"format": "moetune.model.v1", "name": "file-model", "num_layers": 8,
 "hidden_size": 2048, "vocab_size": 32000, "num_attention_heads": 16,
 "num_kv_heads": 4, "head_dim": 128, "ffn_hidden_size": 8192,
 "num_routed_experts": 16, "moe_top_k": 2, "moe_ffn_hidden_size": 1024}
JSON
echo '{"preset": "h100-sxm", "name": "my-h100"}' > "$TMP/cluster.json"
"$BIN" plan --model "$TMP/model.json" --cluster "$TMP/cluster.json" --gpus 8 --seq 2048 --gbs 32 \
    --format text > "$TMP/file.txt" 2> "$TMP/err"
check "model and cluster files" 0 $?
expect_in "file model name" "$TMP/file.txt" "file-model on 8 x my-h100"
echo '{"format": "moetune.model.v1", "name": "broken"}' > "$TMP/bad_model.json"
"$BIN" plan --model "$TMP/bad_model.json" --cluster h100-sxm --gpus 8 --seq 2048 --gbs 32 > /dev/null 2> "$TMP/err"
check "bad model file" 2 $?
one_line "bad model file" "$TMP/err"

# 0: --out writes the file whole and prints nothing.
"$BIN" plan "${SMALL[@]}" --format megatron --out "$TMP/plan.sh" > "$TMP/stdout" 2> "$TMP/err"
check "--out" 0 $?
expect_in "--out content" "$TMP/plan.sh" "MEGATRON_ARGS=("
[ -s "$TMP/stdout" ] && { echo "FAIL: --out also printed to stdout"; fails=$((fails + 1)); }
ls "$TMP"/plan.sh.tmp.* > /dev/null 2>&1 && { echo "FAIL: temporary file left behind"; fails=$((fails + 1)); }
# A directory that does not exist: exit 2, and no file appears.
"$BIN" plan "${SMALL[@]}" --out "$TMP/no/such/dir/plan.json" > /dev/null 2> "$TMP/err"
check "--out bad dir" 2 $?
one_line "--out bad dir" "$TMP/err"

# 2: bad input, one line on stderr naming the problem.
"$BIN" plan "${SMALL[@]}" --fix tpp=2 > /dev/null 2> "$TMP/err"
check "bad --fix key" 2 $?
one_line "bad --fix key" "$TMP/err"
expect_in "bad --fix key message" "$TMP/err" "unknown key 'tpp'"
"$BIN" plan "${SMALL[@]}" --fix tp=x > /dev/null 2> "$TMP/err"
check "bad --fix value" 2 $?
expect_in "bad --fix value message" "$TMP/err" "tp=x"
"$BIN" plan --model no-such-model --cluster h100-sxm --gpus 8 --seq 4096 --gbs 64 > /dev/null 2> "$TMP/err"
check "unknown model" 2 $?
one_line "unknown model" "$TMP/err"
"$BIN" plan --model llama3-8b --cluster h100-sxm --seq 4096 --gbs 64 > /dev/null 2> "$TMP/err"
check "missing --gpus" 2 $?
expect_in "missing --gpus message" "$TMP/err" "missing --gpus"
"$BIN" plan "${SMALL[@]}" --format yaml > /dev/null 2> "$TMP/err"
check "bad --format" 2 $?
"$BIN" plan "${SMALL[@]}" --precision nvfp4 > /dev/null 2> "$TMP/err"
check "precision the GPU lacks" 2 $?
expect_in "precision message" "$TMP/err" "nvfp4"
"$BIN" plan "${SMALL[@]}" --fix tp=3 > /dev/null 2> "$TMP/err"
check "impossible --fix" 2 $?
expect_in "impossible --fix message" "$TMP/err" "tp=3"

# 3: no feasible plan, with the tightest constraint.
"$BIN" plan --model deepseek-v3 --cluster h100-sxm --gpus 8 --seq 4096 --gbs 64 > /dev/null 2> "$TMP/err"
check "infeasible" 3 $?
one_line "infeasible" "$TMP/err"
expect_in "infeasible message" "$TMP/err" "gradients alone need"
"$BIN" plan "${SMALL[@]}" --max-memory-fraction 0.05 > /dev/null 2> "$TMP/err"
check "infeasible by fraction" 3 $?
expect_in "infeasible by fraction message" "$TMP/err" "no plan fits in memory"

# --stack: the software generation, named in the emitted file's header.
"$BIN" plan "${SMALL[@]}" --stack 26.04 --format megatron > "$TMP/stack.sh" 2> "$TMP/err"
check "--stack megatron" 0 $?
expect_in "--stack in header" "$TMP/stack.sh" "^# problem: .*software stack 26.04 (modelled as generation 26.02)"
"$BIN" plan "${SMALL[@]}" --stack v26 > /dev/null 2> "$TMP/err"
check "bad --stack" 2 $?
one_line "bad --stack" "$TMP/err"

# --dp-outermost: the rank order pinned (as --fix dp_outermost=true), the
# Megatron flag emitted, the JSON layout saying so; Megatron's default
# order otherwise; a contradicting --fix is bad input.
PP2=(--model llama3-8b --cluster h100-sxm --gpus 16 --seq 4096 --gbs 64 --fix pp=2)
"$BIN" plan "${PP2[@]}" --dp-outermost --format megatron > "$TMP/dpo.sh" 2> "$TMP/err"
check "--dp-outermost megatron" 0 $?
expect_in "--dp-outermost flag" "$TMP/dpo.sh" "^  --use-tp-pp-dp-mapping$"
expect_in "--dp-outermost layout line" "$TMP/dpo.sh" "^# layout: .*rank_order=tp-cp-ep-pp-dp"
"$BIN" plan "${PP2[@]}" --dp-outermost --format json > "$TMP/dpo.json" 2> "$TMP/err"
check "--dp-outermost json" 0 $?
expect_in "--dp-outermost json field" "$TMP/dpo.json" '"dp_outermost": true'
"$BIN" plan "${PP2[@]}" --format megatron > "$TMP/plain.sh" 2> "$TMP/err"
check "default order megatron" 0 $?
if grep -q -- "--use-tp-pp-dp-mapping" "$TMP/plain.sh"; then
  echo "FAIL: --use-tp-pp-dp-mapping without --dp-outermost"; fails=$((fails + 1))
fi
"$BIN" plan "${SMALL[@]}" --dp-outermost --fix dp_outermost=false > /dev/null 2> "$TMP/err"
check "--dp-outermost vs --fix" 2 $?
one_line "--dp-outermost vs --fix" "$TMP/err"
expect_in "--dp-outermost vs --fix message" "$TMP/err" "contradicts --fix dp_outermost=false"
"$BIN" plan "${SMALL[@]}" --framework maxtext --dp-outermost > /dev/null 2> "$TMP/err"
check "--dp-outermost maxtext" 2 $?
expect_in "--dp-outermost maxtext message" "$TMP/err" "MaxText: dp_outermost"

if [ "$fails" -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "all passed"
