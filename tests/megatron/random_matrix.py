#!/usr/bin/python3
"""Writes a matrix.txt of random plans for check_plans.py: a second matrix,
drawn rather than chosen, so the start-up checks are not only run on the
cases the emitter was written against.

Each case is a random model preset on one of the clusters it is trained on,
a random GPU count / global batch / precision, and one to four random pins
among the knobs the search chooses (layout sizes, micro-batch, recompute,
offload, dispatcher, CUDA graphs, overlap, FSDP, grouped GEMM, streams).
A draw whose pins leave no plan (moetune plan exits 2 naming the rule,
or 3: nothing fits in memory) is dropped; any other failure of `moetune plan` fails the run. The draw is a
pure function of the seed.

Usage: random_matrix.py MOETUNE SEED COUNT OUT_MATRIX
"""
import random
import subprocess
import sys

# model preset, clusters it is trained on, GPU counts, sequence, global batches
JOBS = [
    ("deepseek-v3", ["gb200-nvl72", "h100-sxm", "b200", "gb300-nvl72", "h800", "b300", "h200"],
     [256, 512, 1024, 2048], 4096, [2048, 4096, 8192, 16384]),
    ("kimi-k2", ["gb300-nvl72", "h800", "gb200-nvl72", "h100-sxm"], [512, 1024, 2048], 4096,
     [2048, 4096, 8192]),
    ("qwen3-235b-a22b", ["h100-sxm", "gb200-nvl72", "b200", "gb300-nvl72", "h200"],
     [64, 128, 256, 512], 4096, [1024, 2048, 4096, 8192]),
    ("qwen3-30b-a3b", ["h200", "gb300-nvl72", "b300", "h100-sxm", "gb200-nvl72"], [8, 16, 32, 64],
     4096, [256, 512, 1024]),
    ("gpt-oss-120b", ["h100-sxm", "gb300-nvl72", "b200", "gb200-nvl72"], [32, 64, 128], 4096,
     [512, 1280, 2048]),
    ("mixtral-8x7b", ["b200", "h100-sxm", "gb200-nvl72"], [32, 64, 128], 4096, [256, 512]),
    ("mixtral-8x22b", ["h100-sxm", "b300", "gb300-nvl72"], [64, 128, 256], 4096, [256, 512, 1024]),
    ("llama3-8b", ["h100-sxm", "b200", "gb200-nvl72"], [8, 16, 64], 8192, [128, 256]),
    ("llama3-70b", ["b300", "h100-sxm", "gb200-nvl72", "gb300-nvl72"], [64, 128, 256], 8192,
     [128, 256, 512]),
    ("llama3.1-405b", ["h100-sxm", "gb200-nvl72", "gb300-nvl72"], [256, 512, 1024], 8192,
     [512, 1536]),
    ("gpt3-175b", ["h100-sxm", "b200"], [128, 512], 2048, [1024, 2048]),
    ("moonlight-16b-a3b", ["h100-sxm", "gb200-nvl72"], [8, 16, 64], 4096, [512, 1024, 2048]),
    ("gpt-oss-20b", ["h100-sxm", "b200"], [16, 32, 64], 4096, [512, 1024]),
    ("qwen3-8b", ["h100-sxm", "gb200-nvl72"], [8, 16, 64], 4096, [256, 1024]),
    ("glm-4.5", ["h100-sxm", "gb200-nvl72", "b300"], [128, 256, 512], 4096, [1024, 2048, 4096]),
    ("glm-4.5-air", ["h100-sxm", "b200", "gb300-nvl72"], [32, 64, 128], 4096, [256, 512, 1024]),
]

# knob -> values a pin draws from (planner/search_space.h's --fix keys)
PINS = {
    "tp": ["1", "2", "4", "8"],
    "pp": ["1", "2", "4", "8", "16"],
    "vp": ["1", "2", "3", "4"],
    "ep": ["1", "4", "8", "16", "32", "64"],
    "etp": ["1", "2"],
    "cp": ["1", "2"],
    "mbs": ["1", "2", "4"],
    "recompute": ["none", "full", "selective", "core_attn+layernorm", "moe_act+mlp",
                  "mla_up_proj+moe_act", "moe", "shared_experts+layernorm"],
    "offload": ["none", "expert_fc1+moe_act", "core_attn+attn_proj", "all", "attn_norm+mlp_norm"],
    "dispatcher": ["alltoall", "fused_dedup"],
    "cuda_graphs": ["true", "false"],
    "overlap": ["none", "tp+ep", "dp", "ep+dp+pp", "tp+dp", "true", "false"],
    "shard_params": ["true", "false"],
    "grouped_gemm": ["true", "false"],
    "comm_streams": ["1", "2"],
}
PRECISIONS = ["bf16", "fp8", "mxfp8", "auto"]


def draw(rng):
    model, clusters, gpus, seq, batches = rng.choice(JOBS)
    pins = rng.sample(sorted(PINS), rng.randint(1, 4))
    args = ["--model", model, "--cluster", rng.choice(clusters), "--seq", str(seq),
            "--gbs", str(rng.choice(batches)), "--precision", rng.choice(PRECISIONS),
            "--fix", ",".join("%s=%s" % (k, rng.choice(PINS[k])) for k in pins)]
    return rng.choice(gpus), args


def main():
    moetune, seed, count, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    lines, dropped = [], 0
    while len(lines) < count:
        if dropped > 40 * count:
            print("FAIL: %d draws left no plan; the generator is broken" % dropped)
            return 1
        gpus, args = draw(rng)
        r = subprocess.run([moetune, "plan", "--gpus", str(gpus)] + args +
                           ["--format", "json", "--threads", "1"], capture_output=True, text=True)
        if r.returncode in (2, 3):  # the pins break a rule / nothing fits
            dropped += 1
            continue
        if r.returncode != 0:
            print("FAIL: moetune plan --gpus %d %s exited %d: %s" %
                  (gpus, " ".join(args), r.returncode, r.stderr.strip()))
            return 1
        lines.append("rand%d_%02d %5d %s" % (seed, len(lines), gpus, " ".join(args)))
    with open(out, "w", encoding="utf-8") as f:
        f.write("# random_matrix.py seed %d: %d plans (%d draws left no plan)\n" %
                (seed, count, dropped))
        f.write("\n".join(lines) + "\n")
    print("%d random plans drawn (seed %d), %d draws dropped (no plan)" % (count, seed, dropped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
