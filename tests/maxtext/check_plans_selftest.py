#!/usr/bin/python3
"""The checker of check_plans.py can fail: the seed golden
(planner/testdata/golden/deepseek_v3_gb200_128_maxtext.maxtext.yaml, 128
GPUs, gbs 768) passes, and each edit below -- one broken MaxText condition --
is reported. Usage: check_plans_selftest.py DATA_JSON GOLDEN_YAML"""
import json
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import check_plans  # noqa: E402

data = json.load(open(sys.argv[1]))
golden = open(sys.argv[2], encoding="utf-8").read()
plan = {"framework": "maxtext",
        "config": {"parallel": {"tp": 1, "cp": 1, "pp": 1, "ep": 8, "dp": 128,
                                "shard_params": True}}}
failures = 0


def expect(label, text, want, gbs=768, p=plan):
    global failures
    errors = check_plans.check_yaml(text, 128, gbs, data, p)
    hit = [e for e in errors if want in e] if want else errors
    ok = (not errors) if want is None else bool(hit)
    print("%s %s: %s" % ("ok  " if ok else "FAIL", label, errors))
    failures += 0 if ok else 1


def edit(old, new):
    assert old in golden, old
    return golden.replace(old, new, 1)


expect("golden passes", golden, None)
expect("unknown key", golden + "ici_bogus_parallelism: 1\n", "not in base.yml")
expect("ici product", edit("ici_fsdp_parallelism: 8\n", "ici_fsdp_parallelism: 4\n"), "ici product")
expect("dcn product", edit("dcn_fsdp_parallelism: 2\n", "dcn_fsdp_parallelism: 4\n"), "dcn product")
expect("batch", golden, "!= gbs", gbs=1024)
expect("fractional per-step batch", edit("per_device_batch_size: 6\n", "per_device_batch_size: 6.001\n"),
       "is not whole")
expect("remat value", edit("moe_mlpwo: device\n", "moe_mlpwo: host\n"), "not remat/device/offload")
expect("layer input remat", edit("decoder_layer_input: device\n", "decoder_layer_input: remat\n"),
       "cannot be rematerialized")
expect("remat policy", edit("remat_policy: custom\n", "remat_policy: none\n"), "not a RematPolicy")
expect("quantization", edit("quantization: te_fp8_currentscaling\n", "quantization: te_fp8\n"),
       "not a QuantizationType")
expect("xla flag", edit("--xla_gpu_enable_pipelined_all_gather=true", "--xla_gpu_pipeline_all_gather=on"),
       "not recorded")
pp = edit("ici_pipeline_parallelism: 1\n", "ici_pipeline_parallelism: 2\n").replace(
    "ici_fsdp_parallelism: 8\n", "ici_fsdp_parallelism: 4\n") + \
    "num_layers_per_pipeline_stage: 4\nnum_pipeline_repeats: 7\n"
expect("pipeline product", pp, "pipelined layers")
expect("plan mesh", golden, "mesh expert",
       p={"framework": "maxtext",
          "config": {"parallel": {"tp": 1, "cp": 1, "pp": 1, "ep": 4, "dp": 128,
                                  "shard_params": True}}})
expect("model config missing", edit("model_name: deepseek3-671b\n", "model_name: deepseek-v3\n"),
       "has no config")
expect("model key set twice", golden + "base_emb_dim: 7168\n", "set by model config")
print("%d failed" % failures)
sys.exit(1 if failures else 0)
