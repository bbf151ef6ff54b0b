#!/usr/bin/python3
"""Checks every plan of matrix.txt, as `moetune plan --framework maxtext
--format maxtext` emits it, against what MaxText itself validates before it
runs (MaxText at the commit recorded in maxtext_e591f30.json; JAX is not
run here, so these are the same conditions restated, not MaxText's code):

  1. keys: every key of the YAML is a top-level key of MaxText's
     configs/base.yml (pydantic MaxTextConfig has extra='forbid': an unknown
     key is an error); a model_name names a model config of that commit and
     no key it sets is set again (pyconfig validate_no_keys_overridden_twice);
  2. mesh: over base.yml's mesh_axes (with base.yml's defaults for the axes
     the YAML leaves out, at most one -1 filled in), the ici_* product equals
     the devices per slice and the dcn_* product equals the slices (num_slices,
     or with it left to JAX the count the file states)
     (max_utils.fill_unspecified_mesh_axes, called by
     maxtext_utils.create_device_mesh);
  3. batch: per_device_batch_size x devices is a whole number of sequences
     and x gradient_accumulation_steps is the run's global batch
     (types.py calculate_global_batch_sizes);
  4. pipeline (stages > 1): stages x num_pipeline_repeats x
     num_layers_per_pipeline_stage == pipeline_parallel_layers, and
     num_pipeline_microbatches is a multiple of the stages and divides the
     per-step batch (types.py set_derived_and_validate_values);
  5. remat: remat_policy is a RematPolicy value; under 'custom' every named
     tensor is remat/device/offload and is one of the custom-policy tensors,
     and decoder_layer_input is not 'remat' (base.yml: it cannot be
     rematerialized);
  6. quantization is a QuantizationType value;
  7. XLA_FLAGS: every flag is one recorded from the XLA source named in
     maxtext_e591f30.json, command-buffer types among its enum values;
  8. the plan is the one --format json predicts: the framework is maxtext,
     and tensor, expert, context, pipeline and the data/fsdp axes multiply to
     the JSON layout's tp, ep, cp, pp and dp / ep (fsdp when shard_params).
Lines `refuse NAME 'TEXT' GPUS ARGS` run `moetune predict --framework
maxtext` with pins MaxText cannot run: exit 2 with one line naming the
MaxText rule, whose message contains TEXT.

Usage: check_plans.py MOETUNE MATRIX DATA_JSON WORKDIR [NAME_FILTER]
Prints one line per case and 'N passed, M failed'; exit 1 on any failure.
"""
import json
import math
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import yaml


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def mesh_product(cfg, data, prefix, target):
    """fill_unspecified_mesh_axes over base.yml's mesh_axes; (product, error)."""
    vals = []
    for axis in data["default_mesh_axes"]:
        name = "pipeline" if axis == "stage" else axis
        key = "%s_%s_parallelism" % (prefix, name)
        vals.append(cfg.get(key, data["defaults"][key]))
    if vals.count(-1) > 1:
        return None, "%s: more than one axis is -1" % prefix
    if -1 in vals:
        known = math.prod(v for v in vals if v != -1)
        if target % known:
            return None, "%s: -1 axis cannot be filled (%d / %d)" % (prefix, target, known)
        vals[vals.index(-1)] = target // known
    return math.prod(vals), None


def axis(cfg, data, name):
    return (cfg.get("ici_%s_parallelism" % name, data["defaults"]["ici_%s_parallelism" % name]) *
            cfg.get("dcn_%s_parallelism" % name, data["defaults"]["dcn_%s_parallelism" % name]))


def check_yaml(text, gpus, gbs, data, plan):
    """The list of problems of one emitted file (empty: accepted)."""
    errors = []
    cfg = yaml.safe_load(text) or {}
    keys = set(data["base_yml_keys"])
    for k in cfg:
        if k not in keys:
            errors.append("key %r is not in base.yml" % k)
    d = data["defaults"]
    # A model config (model_name): it must exist, and no key it sets may be
    # set again (pyconfig validate_no_keys_overridden_twice).
    model = {}
    if "model_name" in cfg:
        model = data["model_configs"].get(cfg["model_name"])
        if model is None:
            errors.append("model_name %r has no config at the recorded commit" % cfg["model_name"])
            model = {}
        for k in cfg:
            if k in model.get("keys", []):
                errors.append("key %r is set by model config %s too" % (k, cfg["model_name"]))
    # num_slices left to MaxText (-1: JAX's device slice_index); the file
    # says how many slices its mesh assumes.
    slices = cfg.get("num_slices", d["num_slices"])
    if slices == -1:
        m = re.search(r"^# ICI = .*, DCN = across (\d+) slices$", text, re.M)
        slices = int(m.group(1)) if m else 1
    if slices <= 0 or gpus % slices:
        errors.append("num_slices=%s does not divide %d devices" % (slices, gpus))
        return errors
    per_slice = gpus // slices
    ici, err = mesh_product(cfg, data, "ici", per_slice)
    if err:
        errors.append(err)
    elif ici != per_slice:
        errors.append("ici product %d != %d devices per slice" % (ici, per_slice))
    dcn, err = mesh_product(cfg, data, "dcn", slices)
    if err:
        errors.append(err)
    elif dcn != slices:
        errors.append("dcn product %d != %d slices" % (dcn, slices))
    pdbs = float(cfg.get("per_device_batch_size", d["per_device_batch_size"]))
    accum = int(cfg.get("gradient_accumulation_steps", d["gradient_accumulation_steps"]))
    step_batch = pdbs * gpus
    if step_batch != int(step_batch):
        errors.append("per_device_batch_size %g x %d devices is not whole" % (pdbs, gpus))
    if int(step_batch) * accum != gbs:
        errors.append("per_device_batch_size %g x %d x accumulation %d != gbs %d" %
                      (pdbs, gpus, accum, gbs))
    stages = axis(cfg, data, "pipeline")
    if stages > 1:
        layers = cfg.get("pipeline_parallel_layers", d["pipeline_parallel_layers"])
        if layers == -1:
            # types.py: the decoder layers, less the dense ones for deepseek.
            get = lambda k: cfg.get(k, model.get(k, d.get(k)))
            layers = get("base_num_decoder_layers")
            if get("decoder_block") == "deepseek":
                layers -= get("first_num_dense_layers")
        per_stage = cfg.get("num_layers_per_pipeline_stage", d["num_layers_per_pipeline_stage"])
        repeats = cfg.get("num_pipeline_repeats", d["num_pipeline_repeats"])
        if repeats == -1:
            repeats = layers // (stages * per_stage)
        if stages * repeats * per_stage != layers:
            errors.append("stages %d x repeats %d x layers/stage %d != pipelined layers %d" %
                          (stages, repeats, per_stage, layers))
        micro = cfg.get("num_pipeline_microbatches", d["num_pipeline_microbatches"])
        if micro == -1:
            micro = stages
        if micro <= 0 or micro % stages:
            errors.append("num_pipeline_microbatches %d not a multiple of %d stages" %
                          (micro, stages))
        elif int(step_batch) % micro:
            errors.append("per-step batch %d not divisible by %d micro-batches" %
                          (int(step_batch), micro))
    policy = cfg.get("remat_policy", d["remat_policy"])
    if policy not in data["remat_policies"]:
        errors.append("remat_policy %r is not a RematPolicy" % policy)
    tensors = set(data["custom_remat_tensors"])
    for name in tensors:
        v = cfg.get(name, d.get(name, "remat"))
        if v not in data["remat_locations"]:
            errors.append("%s: %r is not remat/device/offload" % (name, v))
    if cfg.get("decoder_layer_input", d["decoder_layer_input"]) == "remat":
        errors.append("decoder_layer_input cannot be rematerialized")
    q = cfg.get("quantization", d["quantization"])
    if q not in data["quantization_types"]:
        errors.append("quantization %r is not a QuantizationType" % q)
    m = re.search(r'^# export XLA_FLAGS="(.*)"$', text, re.M)
    if not m:
        errors.append("no XLA_FLAGS line")
    else:
        for flag in m.group(1).split():
            name, _, value = flag.lstrip("-").partition("=")
            if name not in data["xla_flags"]:
                errors.append("XLA flag %s not recorded from the XLA source" % name)
            if name == "xla_gpu_enable_command_buffer" and value:
                for t in value.split(","):
                    if t not in data["command_buffer_types"]:
                        errors.append("command buffer type %s unknown" % t)
    # 8. The plan the prediction is for.
    if plan.get("framework") != "maxtext":
        errors.append("--format json does not say framework maxtext")
    par = plan["config"]["parallel"]
    want = {"tensor": par["tp"], "context": par["cp"], "pipeline": par["pp"], "expert": par["ep"]}
    data_axis = "fsdp" if par.get("shard_params") else "data"
    want[data_axis] = par["dp"] // par["ep"]
    for name, v in want.items():
        if axis(cfg, data, name) != v:
            errors.append("mesh %s = %d, plan %d" % (name, axis(cfg, data, name), v))
    return errors


def check_case(moetune, data, work, name, gpus, args):
    base = [moetune, "plan", "--framework", "maxtext", "--gpus", str(gpus)] + args
    out = os.path.join(work, name + ".yaml")
    r = run(base + ["--format", "maxtext", "--out", out])
    if r.returncode != 0:
        return ["plan exited %d: %s" % (r.returncode, r.stderr.strip()[-400:])]
    j = run(base + ["--format", "json"])
    if j.returncode != 0:
        return ["--format json exited %d: %s" % (j.returncode, j.stderr.strip()[-400:])]
    plan = json.loads(j.stdout)["best"]
    gbs = int(args[args.index("--gbs") + 1])
    return check_yaml(open(out, encoding="utf-8").read(), gpus, gbs, data, plan)


def check_refusal(moetune, name, expected, gpus, args):
    r = run([moetune, "predict", "--framework", "maxtext", "--gpus", str(gpus)] + args)
    lines = [l for l in r.stderr.strip().splitlines() if l]
    if r.returncode != 2:
        return ["predict exited %d (want 2): %s" % (r.returncode, r.stderr.strip()[-300:])]
    if len(lines) != 1 or "MaxText: " not in lines[0]:
        return ["refusal does not name a MaxText rule in one line: %r" % r.stderr.strip()]
    if expected not in lines[0]:
        return ["refusal names another rule than %r: %r" % (expected, lines[0])]
    return []


def main():
    moetune, matrix, data_path, work = sys.argv[1:5]
    only = sys.argv[5] if len(sys.argv) > 5 else None
    data = json.load(open(data_path))
    os.makedirs(work, exist_ok=True)
    cases = []
    for line in open(matrix):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        words = shlex.split(line)
        refuse = words[0] == "refuse"
        expected = None
        if refuse:
            expected = words[2]
            words = words[1:2] + words[3:]
        name, gpus, args = words[0], int(words[1]), words[2:]
        if only and only not in name:
            continue
        cases.append((refuse, expected, name, gpus, args))

    def one(case):
        refuse, expected, name, gpus, args = case
        if refuse:
            return name, check_refusal(moetune, name, expected, gpus, args)
        return name, check_case(moetune, data, work, name, gpus, args)

    failed = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, errors in pool.map(one, cases):
            if errors:
                failed += 1
                print("FAIL %s: %s" % (name, "; ".join(errors)))
            else:
                print("ok   %s" % name)
    print("%d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
