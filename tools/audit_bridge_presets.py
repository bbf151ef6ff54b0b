#!/usr/bin/env python3
"""Which Megatron-Bridge preset each published table row ran, by its layout.

A Megatron-Bridge table row publishes a layout (TP, PP, CP, VP, EP, MBS,
GBS, FSDP) and a container; the container's release tag holds the
performance presets (scripts/performance/configs/<family>/
*_workload_base_configs.py, `NAME = WorkloadBaseConfig(...)` and
`NAME = replace(BASE, ...)`) the table was measured with. A row whose layout
no preset of its own tag sets did not run that tag's preset as published:
either the table's layout cells are stale or the row ran another tag's
preset. This script says which, per row, and can mark the rows of
tests/data/bridge_tables_heldout.json ("preset_audit"), which
`//tests:validate` then reports apart, as it does the rows a page footnotes
as a known regression.

The presets are read with Python's ast (literal keyword arguments only; no
code from the checkout runs). The defaults come from the tag's
WorkloadBaseConfig (scripts/performance/utils/utils.py).

Usage:
  tools/audit_bridge_presets.py --bridge-git DIR [--rows FILE ...]
      [--annotate IN OUT]
  tools/audit_bridge_presets.py --tag-dir v0.3.0=DIR ... (a plain tree per
      tag, for tests)
"""
import argparse
import ast
import json
import os
import subprocess
import sys

# Container -> Megatron-Bridge release tag (the NeMo Framework container's
# Megatron-Bridge version).
CONTAINER_TAGS = {
    "26.02": "v0.3.0",
    "26.02.01": "v0.3.1",
    "26.04": "v0.4.0",
    "26.04.01": "v0.4.2",
    "26.06": "v0.5.0",
    "26.06.01": "v0.5.1",
}
MODELS = {  # planner/data/models preset -> preset-name prefix
    "llama3-70b": "LLAMA3_70B",
    "llama3.1-405b": "LLAMA31_405B",
    "deepseek-v3": "DEEPSEEK_V3",
    "gpt-oss-120b": "GPT_OSS_120B",
    "qwen3-235b-a22b": "QWEN3_235B_A22B",
    "qwen3-30b-a3b": "QWEN3_30B_A3B",
    "kimi-k2": "KIMI_K2",
}
GPUS = {"gb300-nvl72": "GB300", "gb200-nvl72": "GB200", "b300": "B300", "b200": "B200",
        "h100-sxm": "H100"}
PRECISIONS = {"bf16": ["BF16"], "fp8": ["FP8_CS", "FP8"], "mxfp8": ["FP8_MX"],
              "nvfp4": ["NVFP4"]}
# Every precision token a preset name may carry (FP8_SC: DeepSeek-V3's
# blockwise FP8, which no table row publishes as such).
PRECISION_TOKENS = ("BF16", "FP8_CS", "FP8_MX", "FP8_SC", "FP8", "NVFP4")
# The matched preset's fields the annotation carries beside its name: what
# the recipe runs beyond the layout (None: the preset leaves it to the base
# recipe or the perf script).
KNOBS = ("recompute_modules", "recompute_num_layers", "cpu_offloading_num_layers",
         "use_megatron_fsdp", "moe_a2a_overlap", "moe_flex_dispatcher_backend",
         "cuda_graph_impl", "cuda_graph_scope")
CONFIG_DIR = "scripts/performance/configs"
UTILS = "scripts/performance/utils/utils.py"


class AuditError(Exception):
    pass


class GitTree:
    def __init__(self, repo, tag):
        self.repo, self.tag = repo, tag

    def files(self, under):
        out = subprocess.run(["git", "-C", self.repo, "ls-tree", "-r", "--name-only", self.tag,
                              under], capture_output=True, text=True)
        if out.returncode != 0:
            raise AuditError(f"git ls-tree {self.tag} in {self.repo}: {out.stderr.strip()}")
        return out.stdout.split()

    def read(self, path):
        out = subprocess.run(["git", "-C", self.repo, "show", f"{self.tag}:{path}"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise AuditError(f"git show {self.tag}:{path}: {out.stderr.strip()}")
        return out.stdout


class DirTree:
    def __init__(self, root):
        self.root = root

    def files(self, under):
        found = []
        for d, _, names in os.walk(os.path.join(self.root, under)):
            found += [os.path.relpath(os.path.join(d, n), self.root) for n in names]
        return sorted(found)

    def read(self, path):
        try:
            with open(os.path.join(self.root, path)) as f:
                return f.read()
        except OSError as e:
            raise AuditError(f"{self.root}: {e}") from e


def config_defaults(utils_text, where):
    """WorkloadBaseConfig's field defaults (literal ones) from utils.py."""
    for node in ast.parse(utils_text).body:
        if isinstance(node, ast.ClassDef) and node.name == "WorkloadBaseConfig":
            out = {}
            for f in node.body:
                if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name) and f.value:
                    try:
                        out[f.target.id] = ast.literal_eval(f.value)
                    except ValueError:
                        pass
            return out
    raise AuditError(f"{where}: no class WorkloadBaseConfig")


def presets_of(text, defaults, where):
    """Every `NAME = WorkloadBaseConfig(...)`, `NAME = replace(BASE, ...)` and
    `NAME = OTHER`."""
    presets = {}
    for node in ast.parse(text).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if isinstance(node.value, ast.Name) and node.value.id in presets:
            presets[name] = dict(presets[node.value.id])  # NAME = OTHER_PRESET
            continue
        if not (isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
            continue
        call = node.value
        if call.func.id == "WorkloadBaseConfig":
            fields = dict(defaults)
        elif call.func.id == "replace" and call.args and isinstance(call.args[0], ast.Name):
            base = call.args[0].id
            if base not in presets:
                raise AuditError(f"{where}: {name} replaces {base}, not defined above it")
            fields = dict(presets[base])
        else:
            continue
        for kw in call.keywords:
            try:
                fields[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                fields[kw.arg] = None  # not a literal: unknown
        presets[name] = fields
    return presets


def load_tag(tree, where):
    defaults = config_defaults(tree.read(UTILS), f"{where} {UTILS}")
    presets = {}
    for path in tree.files(CONFIG_DIR):
        if path.endswith("workload_base_configs.py"):
            presets.update(presets_of(tree.read(path), defaults, f"{where} {path}"))
    if not presets:
        raise AuditError(f"{where}: no presets under {CONFIG_DIR}")
    return presets


def layout(p):
    return (p.get("tensor_model_parallel_size"), p.get("pipeline_model_parallel_size"),
            p.get("context_parallel_size"), p.get("virtual_pipeline_model_parallel_size") or 1,
            p.get("expert_model_parallel_size"), p.get("micro_batch_size"),
            p.get("global_batch_size"), bool(p.get("use_megatron_fsdp")))


def row_task(r):
    """The table a row comes from, by its id (extract_bridge_tables.py's)."""
    for marker, task in (("-Pre-Training-", "PRETRAIN"), ("-SFT-", "SFT"), ("-LoRA-", "LORA")):
        if marker in r["id"]:
            return task
    return None


def row_layout(r):
    # The table's FSDP column, kept in the row's notes ("FSDP column = 64").
    fsdp = "FSDP column = " in r.get("notes", "") and "FSDP column = 0" not in r["notes"]
    return (r["tp"], r["pp"], r.get("cp") or 1, r.get("vp") or 1, r.get("ep") or 1,
            r["micro_batch"], r["global_batch"], fsdp)


def candidates(presets, r):
    """Presets for the row's model, GPU, task and precision (any version)."""
    prefix = f"{MODELS[r['model_id']]}_{row_task(r)}_CONFIG_{GPUS[r['cluster_preset']]}"
    out = []
    for name, p in presets.items():
        if not name.startswith(prefix):
            continue
        if precision_token(name[len(prefix):].lstrip("_")) in PRECISIONS[r["precision_id"]]:
            out.append(name)
    return sorted(out)


def precision_token(rest):
    """The precision a preset name's tail starts with, the longest known one
    ("FP8_MX_V2" -> "FP8_MX", not "FP8"); None for a tail without one."""
    for token in sorted(PRECISION_TOKENS, key=len, reverse=True):
        if rest == token or rest.startswith(token + "_"):
            return token
    return None


def audit_row(r, tags):
    """{'tag', 'own_tag_preset', 'other_tags'[, 'own_tag_preset_knobs']} or
    None where the row has no tag, model, GPU, table or precision this audit
    knows."""
    tag = CONTAINER_TAGS.get(r.get("container"))
    if (tag is None or tag not in tags or r.get("model_id") not in MODELS or
            r.get("cluster_preset") not in GPUS or r.get("precision_id") not in PRECISIONS or
            row_task(r) is None):
        return None
    want = row_layout(r)
    own = [n for n in candidates(tags[tag], r) if layout(tags[tag][n]) == want]
    other = [f"{t}:{n}" for t in sorted(tags) if t != tag
             for n in candidates(tags[t], r) if layout(tags[t][n]) == want]
    out = {"tag": tag, "own_tag_preset": own[0] if own else None, "other_tags": other}
    if own:
        preset = tags[tag][own[0]]
        out["own_tag_preset_knobs"] = {k: preset[k] for k in KNOBS if k in preset}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bridge-git", help="a Megatron-Bridge git checkout or mirror")
    ap.add_argument("--tag-dir", action="append", default=[], metavar="TAG=DIR",
                    help="a plain tree for one tag (instead of --bridge-git)")
    ap.add_argument("--rows", nargs="*", default=[], help="rows in runs.json's schema")
    ap.add_argument("--annotate", nargs=2, metavar=("IN", "OUT"),
                    help="write IN's rows to OUT with 'preset_audit' set")
    a = ap.parse_args()
    try:
        tags = {}
        if a.bridge_git:
            for tag in sorted(set(CONTAINER_TAGS.values())):
                tags[tag] = load_tag(GitTree(a.bridge_git, tag), tag)
        for spec in a.tag_dir:
            tag, _, d = spec.partition("=")
            if not d:
                raise AuditError(f"--tag-dir wants TAG=DIR, got '{spec}'")
            tags[tag] = load_tag(DirTree(d), tag)
        if not tags:
            raise AuditError("give --bridge-git or --tag-dir")
        files = list(a.rows) + ([a.annotate[0]] if a.annotate else [])
        loaded = {}
        for f in files:
            with open(f) as fh:
                d = json.load(fh)
            loaded[f] = d if isinstance(d, list) else d.get("runs", [])
        unmatched = audited = skipped = 0
        for f in files:
            for r in loaded[f]:
                res = audit_row(r, tags)
                if res is None:
                    skipped += 1
                    continue
                audited += 1
                if a.annotate and f == a.annotate[0]:
                    r["preset_audit"] = res
                if res["own_tag_preset"] is None:
                    unmatched += 1
                    print(f"{os.path.basename(f)}: {r['id']}: layout tp{r['tp']} pp{r['pp']} "
                          f"vp{r.get('vp') or 1} cp{r.get('cp') or 1} ep{r.get('ep') or 1} "
                          f"mbs{r['micro_batch']} gbs{r['global_batch']}: no preset of "
                          f"{res['tag']} sets it; other tags: "
                          f"{', '.join(res['other_tags']) or 'none'}")
        print(f"{audited} rows audited ({skipped} without a 26.x container, model, GPU, table or "
              f"precision the audit knows); {unmatched} publish a layout no preset of their "
              f"container's tag sets")
        if a.annotate:
            out = a.annotate[1]
            tmp = out + ".tmp"
            with open(tmp, "w") as fh:
                json.dump(loaded[a.annotate[0]], fh, indent=1)
                fh.write("\n")
            os.replace(tmp, out)
    except (AuditError, OSError, json.JSONDecodeError, SyntaxError, KeyError) as e:
        print(f"audit_bridge_presets: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
