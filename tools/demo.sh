#!/usr/bin/env bash
# The main job, end to end, on one machine:
#   1. installs what is missing and builds the server, the agent and the CLI;
#   2. starts moetune-server with an SQLite store in a temporary directory and
#      one local moetune-agent (CUDA probes when a GPU is present, else CPU);
#   3. runs a calibration campaign on that agent and shows the measurements;
#   4. submits DeepSeek-V3 for 1,024 GB200 GPUs (NVL72 racks), seq 4096,
#      global batch 8192, waits for the plan job and prints the tuned
#      configuration with its prediction and breakdown, then the Megatron-LM
#      arguments; then plans the seed run's job (DeepSeek-V3 on 128 GB200,
#      gbs 768) with --framework maxtext and prints its MaxText YAML;
#   5. stops what it started and removes the temporary directory.
# The local agent measures this machine, not a GB200 rack, so the GB200 plan
# comes from datasheet priors (the output says so); on a real cluster, point
# --calibration_cluster at the cluster the agents registered.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== demo: checking dependencies"
tools/setup.sh

echo "== demo: building //server:moetune-server //agent:moetune-agent //tools:moetune"
bazel build //server:moetune-server //agent:moetune-agent //tools:moetune
BIN="$(bazel info bazel-bin 2>/dev/null)"
SERVER="$BIN/server/moetune-server"
AGENT="$BIN/agent/moetune-agent"
CLI="$BIN/tools/moetune"

WORK="$(mktemp -d /tmp/moetune-demo.XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== demo: starting moetune-server (store: $WORK/moetune.db)"
"$SERVER" --listen 127.0.0.1:0 --db "$WORK/moetune.db" --port_file "$WORK/port" \
  >"$WORK/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do   # up to 30 s for the server to bind
  [[ -s "$WORK/port" ]] && break
  kill -0 "${PIDS[0]}" 2>/dev/null || { cat "$WORK/server.log"; exit 1; }
  sleep 0.1
done
[[ -s "$WORK/port" ]] || { echo "server did not start"; cat "$WORK/server.log"; exit 1; }
ADDR="127.0.0.1:$(cat "$WORK/port")"
echo "   listening on $ADDR"

echo "== demo: starting one local moetune-agent (backend auto: CUDA if a GPU is present, else CPU)"
"$AGENT" --server "$ADDR" --cluster demo --node "$(hostname)-demo" --backend auto \
  --spool "$WORK/agent.spool" >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do
  "$CLI" agents --server "$ADDR" --format json 2>/dev/null | grep -q '"node' && break
  sleep 0.1
done
"$CLI" agents --server "$ADDR"

PROFILE=quick
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then PROFILE=standard; fi
echo "== demo: calibration campaign on cluster 'demo' (profile $PROFILE)"
"$CLI" calibrate --server "$ADDR" --cluster demo --profile "$PROFILE" --wait
"$CLI" measurements --server "$ADDR" --cluster demo >"$WORK/measurements.txt"
echo "   $(($(wc -l <"$WORK/measurements.txt") - 1)) measurements stored; the first 12:"
head -n 13 "$WORK/measurements.txt"

echo "== demo: plan DeepSeek-V3 on 1,024 GB200 GPUs (gb200-nvl72), seq 4096, global batch 8192"
"$CLI" submit --server "$ADDR" --model deepseek-v3 --cluster gb200-nvl72 \
  --gpus 1024 --seq 4096 --gbs 8192 --wait | tee "$WORK/submit.txt"
JOB="$(grep -Eo 'job[-_ ][A-Za-z0-9_-]+|JOB [A-Za-z0-9_-]+' "$WORK/submit.txt" | head -n1 | awk '{print $NF}')"
echo "== demo: tuned configuration (job $JOB)"
"$CLI" status --server "$ADDR" "$JOB"
echo "== demo: where the step time and the memory go (best plan, from the job's JSON)"
"$CLI" fetch --server "$ADDR" "$JOB" --format json >"$WORK/plan.json"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$WORK/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["prediction"]
print("  %.1f tokens/s/GPU, %.1f model TFLOPS/GPU, MFU %.1f%%, step %.3f s, peak %.1f GiB of %.1f GiB (%s)"
      % (p["tokens_per_sec_per_gpu"], p["model_tflops_per_gpu"], 100 * p["mfu"], p["step_time_s"],
         p["peak_memory_gib"], p["hbm_gib"], p["cost_source"]))
for t in p["breakdown"]:
    print("  %-32s %8.3f s%s" % (t["name"], t["seconds"], "  (hidden)" if t["hidden"] else ""))
print("  memory per GPU: " + ", ".join("%s %.1f GiB" % (k[:-len("_bytes")], v / 2**30)
                                       for k, v in p["memory"].items()))
PY
else
  cat "$WORK/plan.json"
fi
echo "== demo: Megatron-LM arguments"
"$CLI" fetch --server "$ADDR" "$JOB" --format megatron | tee "$WORK/megatron_args.sh"
CHECK="$(dirname "$PWD")/shared/tools/megatron_check.py"
if [[ -f "$CHECK" ]] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "== demo: Megatron-LM's own argument parser and start-up checks on that file"
  /usr/bin/python3 "$CHECK" --megatron "$(dirname "$PWD")/shared/third_party/megatron-lm" \
    --world-size 1024 --startup "$WORK/megatron_args.sh" 2>/dev/null ||
    echo "demo: Megatron-LM rejected the plan (see above)"
fi
echo "== demo: a MaxText plan (--framework maxtext): DeepSeek-V3 on 128 GB200, gbs 768"
"$CLI" submit --server "$ADDR" --framework maxtext --model deepseek-v3 --cluster gb200-nvl72 \
  --gpus 128 --seq 4096 --gbs 768 --wait | tee "$WORK/submit_maxtext.txt"
MT_JOB="$(grep -Eo 'job[-_ ][A-Za-z0-9_-]+|JOB [A-Za-z0-9_-]+' "$WORK/submit_maxtext.txt" | head -n1 | awk '{print $NF}')"
echo "== demo: MaxText YAML"
"$CLI" fetch --server "$ADDR" "$MT_JOB" --format maxtext
echo "== demo: done; stopping the server and the agent"
