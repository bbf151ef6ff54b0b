#!/usr/bin/python3
"""Runs Megatron-LM's own argument parser, validate_args and start-up checks
(../shared/tools/megatron_check.py --startup) on every plan of matrix.txt, as
emitted by `moetune plan --format megatron`, and checks that the file is the
plan the prediction is for:

  1. Megatron prints ACCEPTED;
  2. every WARNING it prints is one of ADVISORY below (advice that does not
     change what runs); any other warning -- a setting Megatron changes behind
     the plan's back -- fails;
  3. the layers Megatron builds on each (pipeline rank, virtual stage) are the
     plan's stage_layers (from --format json of the same plan): Megatron's own
     get_num_layers_to_build for the flag forms, the layout string otherwise;
  4. the knobs of --format json are exactly what the flags set (recompute,
     offload, dispatcher, grouped GEMM, each overlap, CUDA graphs, precision,
     optimizer-state precision, layout sizes, FSDP, rank order, BF16 gradient reduction).
Lines `refuse NAME GPUS ARGS` run `moetune predict` with pins the framework
forbids: exit 2 with one line naming the Megatron-Core rule.

Usage: check_plans.py MOETUNE MATRIX SHARED_DIR WORKDIR [NAME_FILTER]
Prints one line per case and 'N passed, M failed'; exit 1 on any failure.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

# Warnings that are advice, with why they do not contradict the plan.
ADVISORY = [
    # The checker adds NullTokenizer for the user's tokenizer flags.
    (r"^Overriding default arguments for tokenizer_type", "harness: user-added tokenizer"),
    # MLA's fused RoPE: a note about inference support.
    (r"^apply_rope_fusion for multi-latent attention only supports training",
     "inference-only caveat"),
    # Hopper: TP/CP want one hardware queue, EP overlap many; the plan exports
    # CUDA_DEVICE_MAX_CONNECTIONS=32 (EP overlap first), as the warning offers.
    (r"^For Hopper and before, try not to use tensor model parallelism or context "
     r"parallelism with overlap_moe_expert_parallel_comm", "performance advice"),
    (r"^Using tensor model parallelism or context parallelism with Megatron-FSDP",
     "performance advice (CUDA_DEVICE_MAX_CONNECTIONS left unset, as FSDP needs)"),
    (r"^Verify that fused gradient accumulation is supported by TransformerEngine "
     r"for Megatron-FSDP", "advice to the user, nothing changed"),
    (r"^If you are using transformer_engine as the transformer implementation, the "
     r"core_attn is from transformer_engine", "advice: core_attn recompute is the plan's choice"),
]


def sh_words(path):
    """The MEGATRON_ARGS words of an emitted file (comments dropped)."""
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^MEGATRON_ARGS=\((.*?)^\)", text, re.M | re.S)
    body = "\n".join(l for l in m.group(1).splitlines() if not l.strip().startswith("#"))
    return shlex.split(body), text


def flag_values(words):
    """{flag: [values]} of a Megatron argv."""
    out, cur = {}, None
    for w in words:
        if w.startswith("--"):
            cur = w
            out.setdefault(cur, [])
        elif cur is not None:
            out[cur].append(w)
    return out


def layout_stage_layers(layout):
    """Decoder layers per virtual stage of a --pipeline-model-parallel-layout."""
    s = layout.replace(",", "")
    s = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), s)
    s = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), s)
    return [stage.count("t") for stage in s.split("|")]


def expected_flags(plan, model_is_moe, mtp_layers):
    """(name, expected, actual-getter) checks of knobs against flags."""
    par, k = plan["parallel"], plan["knobs"]
    pp, vp, ep, tp = par["pp"], par["vp"], par["ep"], par["tp"]
    checks = [
        ("--tensor-model-parallel-size", [str(tp)]),
        ("--pipeline-model-parallel-size", [str(pp)]),
        ("--context-parallel-size", [str(par["cp"])]),
        ("--micro-batch-size", [str(par["mbs"])]),
        ("--grad-reduce-in-bf16", []),
        ("--overlap-grad-reduce", [] if k["overlap_dp_comm"] else None),
        ("--tp-comm-overlap", [] if k["overlap_tp_comm"] and tp > 1 else None),
        ("--no-overlap-p2p-communication",
         [] if pp > 1 and vp > 1 and not k["overlap_pp_comm"] else None),
        ("--use-megatron-fsdp", [] if par["shard_params"] else None),
        ("--ckpt-format", ["fsdp_dtensor"] if par["shard_params"] else None),
        ("--cuda-graph-impl", ["transformer_engine" if k["cuda_graphs"] else "none"]),
        ("--use-tp-pp-dp-mapping", [] if par.get("dp_outermost") else None),
    ]
    rc = k["recompute"]
    if rc == "none":
        checks.append(("--recompute-granularity", None))
    elif rc == "full":
        checks.append(("--recompute-granularity", ["full"]))
    else:
        checks.append(("--recompute-granularity", ["selective"]))
        checks.append(("--recompute-modules", k["recompute_modules"].split(",")))
    off = k["offload_modules"] if k["offload_activations"] else ""
    checks.append(("--offload-modules", off.split(",") if off else None))
    layers = k.get("offload_layers", 0)
    checks.append(("--cpu-offloading-num-layers", [str(layers)] if layers else None))
    bf16_states = k.get("optimizer_states", "fp32") == "bf16"
    for flag, value in (("--use-precision-aware-optimizer", []),
                        ("--main-grads-dtype", ["bf16"]), ("--exp-avg-dtype", ["bf16"]),
                        ("--exp-avg-sq-dtype", ["bf16"])):
        checks.append((flag, value if bf16_states else None))
    prec = k["precision"]
    checks.append(("--fp8-recipe", {"fp8": ["tensorwise"], "mxfp8": ["mxfp8"]}.get(prec)))
    checks.append(("--fp4-recipe", ["nvfp4"] if prec == "nvfp4" else None))
    if model_is_moe:
        checks.append(("--expert-model-parallel-size", [str(ep)]))
        checks.append(("--expert-tensor-parallel-size", [str(par["etp"])]))
        checks.append(("--moe-token-dispatcher-type",
                       ["flex" if k["dispatcher"] == "fused_dedup" else "alltoall"]))
        checks.append(("--moe-grouped-gemm", [] if k["grouped_gemm"] else None))
        checks.append(("--overlap-moe-expert-parallel-comm",
                       [] if k["overlap_ep_comm"] and ep > 1 else None))
    if not model_is_moe:
        # Dense, DP outermost, pp > 1, cp > 1: the unused expert grid sized
        # tp x cp (parallel_state.py asserts its pipeline groups are the
        # dense ones in order tp-cp-ep-pp-dp); otherwise Megatron's default.
        dense_etp = par.get("dp_outermost") and pp > 1 and par["cp"] > 1
        checks.append(("--expert-tensor-parallel-size",
                       [str(tp * par["cp"])] if dense_etp else None))
    return checks


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check_plan(name, gpus, args, moetune, shared, work):
    errs = []
    js, sh = os.path.join(work, name + ".json"), os.path.join(work, name + ".sh")
    base = [moetune, "plan", "--gpus", gpus] + args
    for fmt, out in (("json", js), ("megatron", sh)):
        r = run(base + ["--format", fmt, "--out", out])
        if r.returncode != 0:
            return ["plan --format %s exit %d: %s" % (fmt, r.returncode, r.stderr.strip())]
    plan = json.load(open(js))["best"]["config"]
    r = run(["/usr/bin/python3", os.path.join(shared, "tools", "megatron_check.py"),
             "--megatron", os.path.join(shared, "third_party", "megatron-lm"),
             "--world-size", gpus, "--startup", sh])
    verdict = r.stdout.strip()
    if verdict != "ACCEPTED":
        errs.append("Megatron: " + verdict)
    built = None
    for line in r.stderr.splitlines():
        if line.startswith("WARNING: "):
            msg = line[len("WARNING: "):]
            if not any(re.search(p, msg) for p, _ in ADVISORY):
                errs.append("warning contradicting the plan: " + msg)
        m = re.match(r"INFO: decoder layers Megatron builds per pipeline rank .*?: (.*)$", line)
        if m:
            built = [[int(x) for x in rank.split(",")] for rank in m.group(1).split(" | ")]
    words, text = sh_words(sh)
    flags = flag_values(words)
    # 3. layers per (rank, virtual stage).
    par = plan["parallel"]
    pp, vp = par["pp"], par["vp"]
    stages = plan.get("stage_layers", [])
    want = [[stages[v * pp + r] for v in range(vp)] for r in range(pp)] if stages else None
    if "--pipeline-model-parallel-layout" in flags:
        got_stages = layout_stage_layers(flags["--pipeline-model-parallel-layout"][0])
        got = [[got_stages[v * pp + r] for v in range(vp)] for r in range(pp)]
    else:
        got = built
    if want is not None and got is not None and got != want:
        errs.append("layers per rank/stage: Megatron builds %s, the plan priced %s" % (got, want))
    if want is not None and got is None and verdict == "ACCEPTED":
        errs.append("no layer split to compare (neither a layout nor Megatron's INFO line)")
    # 4. knobs == flags.
    model = plan["model"]
    for flag, expect in expected_flags(plan, model.get("num_routed_experts", 0) > 0,
                                       model.get("mtp_layers", 0)):
        got = flags.get(flag)
        if expect is None and got is not None:
            errs.append("%s set (%s) but the plan's knobs do not have it" % (flag, got))
        elif expect is not None and got is None:
            errs.append("%s missing: the plan's knobs need %s" % (flag, expect))
        elif expect is not None and sorted(got) != sorted(expect):
            errs.append("%s %s, the plan's knobs say %s" % (flag, got, expect))
    if k_offload(plan) and "export NVTE_CPU_OFFLOAD_V1=1" not in text:
        errs.append("offload without export NVTE_CPU_OFFLOAD_V1=1")
    return errs


def k_offload(plan):
    k = plan["knobs"]
    return k["offload_activations"] and k["offload_modules"]


def check_refusal(name, gpus, args, moetune):
    r = run([moetune, "predict", "--gpus", gpus] + args)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode != 2:
        return ["predict exit %d, want 2 (stderr: %s)" % (r.returncode, r.stderr.strip())]
    if len(lines) != 1 or "Megatron-Core: " not in lines[0]:
        return ["stderr is not one line naming a Megatron-Core rule: %r" % r.stderr]
    return []


def main():
    moetune, matrix, shared, work = sys.argv[1:5]
    only = sys.argv[5] if len(sys.argv) > 5 else ""
    cases = []
    for line in open(matrix, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        w = shlex.split(line)
        kind = "refuse" if w[0] == "refuse" else "plan"
        if kind == "refuse":
            w = w[1:]
        if only and only not in w[0]:
            continue
        cases.append((kind, w[0], w[1], w[2:]))

    def one(case):
        kind, name, gpus, args = case
        if kind == "refuse":
            return name, check_refusal(name, gpus, args, moetune)
        return name, check_plan(name, gpus, args, moetune, shared, work)

    jobs = int(os.environ.get("MEGATRON_CHECK_JOBS", "2"))
    failed = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, errs in pool.map(one, cases):
            if errs:
                failed += 1
                print("FAIL %s" % name)
                for e in errs:
                    print("    " + e)
            else:
                print("ok   %s" % name)
    print("%d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
