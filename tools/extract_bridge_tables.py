#!/usr/bin/env python3
"""Megatron-Bridge performance-table rows that runs.json does not hold, as runs.json rows.

The Megatron-Bridge performance pages (docs/performance-summary.md and
docs/performance-summary-archive.md) publish one table per model and
container.  ../shared/validation/runs.json, the set the model's constants
are set against, holds 88 of their 26.x rows; the others are out-of-sample
evidence.  This script writes those others (pre-training, SFT and LoRA
tables of the 26.x containers, models with a preset in planner/data/models)
in runs.json's schema, for `//tests:validate --heldout_runs`, which never
fits anything to them.

Usage (a Megatron-Bridge checkout at the commit named in --commit):
  tools/extract_bridge_tables.py --bridge DIR --commit 067f987df0 \
      --runs ../shared/validation/runs.json > tests/data/bridge_tables_heldout.json
then mark which release tag's preset each row's layout is (a Megatron-Bridge
git checkout with the release tags):
  tools/audit_bridge_presets.py --bridge-git DIR --annotate \
      tests/data/bridge_tables_heldout.json tests/data/bridge_tables_heldout.json

A row of runs.json counts as the same run when its container, GPU count and
tokens/s/GPU are the table's.  The page footnotes a row cites go into its
"footnotes"; one that calls the number a known software regression also sets
"publisher_known_issue" (the row is kept: validate reports such rows apart).
"""
import argparse
import json
import os
import re
import sys

MODELS = {  # table heading -> planner/data/models preset
    "DeepSeekV3": "deepseek-v3",
    "GPT OSS 120B": "gpt-oss-120b",
    "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b",
    "Kimi_K2": "kimi-k2",
    "LLAMA3_70B": "llama3-70b",
    "LLAMA3.1_405B": "llama3.1-405b",
}
SYSTEMS = {  # table System column -> planner/data/clusters preset, hardware text
    "DGX-GB300": ("gb300-nvl72", "GB300 NVL72 (DGX-GB300)"),
    "DGX-GB200": ("gb200-nvl72", "GB200 NVL72 (DGX-GB200)"),
    "DGX-B300": ("b300", "B300 (DGX-B300, 8-GPU NVLink nodes)"),
    "DGX-B200": ("b200", "B200 (DGX-B200, 8-GPU NVLink nodes)"),
    "DGX-H100": ("h100-sxm", "H100 SXM (DGX-H100, 8-GPU NVLink nodes)"),
}
SECTIONS = {"Pre-Training Performance": "Pre-Training", "SFT Performance": "SFT",
            "LoRA Performance": "LoRA"}
NOTES = {
    "Pre-Training": "MoE rows: router force-balanced, token-dropless (page footnote).",
    "SFT": "SFT fine-tuning benchmark, not pre-training (packed SQuAD, per Bridge perf page).",
    "LoRA": "LoRA fine-tuning benchmark, not pre-training (packed SQuAD, per Bridge perf page).",
}


FOOTNOTE_REF = re.compile(r"\[\^([^\]]*)\]")
# A footnote saying the row's number is a software fault the publisher knows
# of (e.g. the 26.06.01 GPT-OSS-120B rows: "Performance regression ... is a
# known issue", cudnn-frontend issue 256): the row is kept and marked.
KNOWN_ISSUE = re.compile(r"regression|known issue", re.I)


def footnotes(path):
    """{name: text} of a page's footnote definitions ([^name]: text)."""
    notes = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\[\^([^\]]*)\]:\s*(.*)", line)
            if m:
                notes[m.group(1)] = m.group(2).strip()
    return notes


def table_rows(path):
    """Yields (container, section, model heading, {column: cell}, footnote names) of a page's
    26.x tables."""
    container = section = model = header = None
    with open(path) as f:
        for line in f:
            m = re.match(r"## (\S+) NeMo Container", line)
            if m:
                container, section, model = m.group(1), None, None
                continue
            m = re.match(r"### (.*)", line)
            if m:
                section = SECTIONS.get(m.group(1).strip())
                continue
            m = re.match(r"#### Model: (.*)", line)
            if m:
                model = m.group(1).strip()
                continue
            cells = [FOOTNOTE_REF.sub("", c).strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| System"):
                header = cells
            elif (line.startswith("| DGX") and container and container.startswith("26.")
                  and section and model in MODELS and header):
                yield container, section, model, dict(zip(header, cells)), FOOTNOTE_REF.findall(line)


def as_int(cell):
    return None if cell in ("n/a", "", "-") else int(cell)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bridge", required=True, help="Megatron-Bridge checkout")
    ap.add_argument("--commit", required=True, help="its commit, written into each row's source")
    ap.add_argument("--runs", required=True, help="runs.json: rows it holds are left out")
    a = ap.parse_args()
    try:
        with open(a.runs) as f:
            runs = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"--runs {a.runs}: {e}")
    if not isinstance(runs, list):
        sys.exit(f"--runs {a.runs}: not a JSON array of rows")
    held = {(r.get("container"), r.get("num_gpus"), round(r.get("tokens_per_sec_per_gpu") or 0))
            for r in runs}
    out, seen = [], set()
    for page in ("docs/performance-summary-archive.md", "docs/performance-summary.md"):
        if not os.path.isfile(os.path.join(a.bridge, page)):
            sys.exit(f"--bridge {a.bridge}: no {page} (a Megatron-Bridge checkout?)")
        notes = footnotes(os.path.join(a.bridge, page))
        for container, section, model, c, refs in table_rows(os.path.join(a.bridge, page)):
            try:
                row = table_row(page, a.commit, container, section, model, c)
            except (KeyError, ValueError, TypeError, ZeroDivisionError) as e:
                sys.exit(f"{page}: {container} {section} {model} {c.get('System', '?')}: "
                         f"bad or missing cell ({type(e).__name__}: {e})")
            missing = [r for r in refs if r not in notes]
            if missing:
                sys.exit(f"{page}: {container} {section} {model} {c['System']}: footnote "
                         f"[^{missing[0]}] is not defined on the page")
            if refs:
                row["footnotes"] = [f"[^{r}]: {notes[r]}" for r in dict.fromkeys(refs)]
                if any(KNOWN_ISSUE.search(notes[r]) for r in refs):
                    row["publisher_known_issue"] = True
            if (container, row["num_gpus"], round(row["tokens_per_sec_per_gpu"])) in held:
                continue
            if row["id"] in seen:
                sys.exit(f"{page}: two rows {row['id']}")
            seen.add(row["id"])
            out.append(row)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


def table_row(page, commit, container, section, model, c):
    """One table row as a runs.json row; KeyError / ValueError / TypeError on a bad cell."""
    gpus, tokens = int(c["#-GPUs"]), float(c["Tokens / sec / GPU"])
    system = c["System"]
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}")
    fsdp = as_int(c.get("FSDP", "0")) or 0
    row_id = (f"mbridge-{container}-{section}-{system}-{model.replace(' ', '_')}-{gpus}g-"
              f"{c['Precision']}-gbs{c['GBS']}-heldout")
    tp, pp, cp = as_int(c["TP"]), as_int(c["PP"]), as_int(c["CP"])
    notes = NOTES[section]
    if fsdp:
        notes += f" FSDP column = {fsdp}."
    if gpus % (tp * pp * cp):
        raise ValueError(f"{gpus} GPUs do not divide by TP x PP x CP = {tp * pp * cp}")
    return {
        "id": row_id,
        "source": f"NVIDIA-NeMo/Megatron-Bridge {page} (commit {commit}), "
                  f"section '{container} NeMo Container / {section}'",
        "model": model,
        "hardware": SYSTEMS[system][1],
        "num_gpus": gpus,
        "seq_len": int(c["Sequence Length"]),
        "global_batch": int(c["GBS"]),
        "micro_batch": int(c["MBS"]),
        "tp": tp, "pp": pp, "cp": cp,
        "ep": as_int(c["EP"]), "etp": None, "vp": as_int(c["VP"]),
        "dp": gpus // (tp * pp * cp),
        "precision": c["Precision"],
        "recompute": None, "offload": None,
        "tokens_per_sec_per_gpu": tokens,
        "model_tflops_per_gpu": float(c["Model TFLOP / sec / GPU"]),
        "notes": notes,
        "container": container,
        "framework": "Megatron-Bridge (NeMo Framework container) / Megatron-Core",
        "model_id": MODELS[model],
        "cluster_preset": SYSTEMS[system][0],
        "precision_id": c["Precision"].lower(),
        "stack": "megatron-core-2026",
    }


if __name__ == "__main__":
    main()
