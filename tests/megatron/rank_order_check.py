#!/usr/bin/python3
"""Checks moetune's rank-order rule (FrameworkRule::kDpOutermostExpertGrid)
against Megatron-LM's own RankGenerator: for every MoE layout of a small grid
that `moetune predict` accepts in Megatron's default order, `predict
--dp-outermost` refuses it naming the rule exactly when Megatron's
initialize_model_parallel would assert for order 'tp-cp-ep-pp-dp' (its two
checks: expert DP size == dense DP size unless the order ends with pp or
pp == 1, and the same pipeline groups on both grids).

RankGenerator and generate_masked_orthogonal_rank_groups are executed from
the shared tree's megatron/core/parallel_state.py unchanged (only those
definitions: importing the module needs a full torch.distributed).

Usage: rank_order_check.py MOETUNE SHARED_DIR
Prints one line per disagreement and 'N layouts, M disagree'; exit 1 if any.
"""
import ast
import itertools
import subprocess
import sys


def megatron_rank_generator(shared):
    path = shared + "/third_party/megatron-lm/megatron/core/parallel_state.py"
    tree = ast.parse(open(path, encoding="utf-8").read())
    keep = [n for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef))
            and n.name in ("generate_masked_orthogonal_rank_groups", "RankGenerator")]
    ns = {}
    exec("from typing import List, Optional, Callable\n", ns)
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    return ns["RankGenerator"]


def megatron_accepts(rank_generator, world, tp, cp, pp, ep, etp, order):
    """The two asserts of initialize_model_parallel after building both grids."""
    dp = world // (tp * cp * pp)
    dense = rank_generator(tp=tp, ep=1, dp=dp, pp=pp, cp=cp, order=order)
    edp = world // (etp * ep * pp)
    expert = rank_generator(tp=etp, ep=ep, dp=edp, pp=pp, cp=1, order=order)
    if not (order.endswith("pp") or pp == 1 or edp == dp):
        return False
    return dense.get_ranks("pp") == expert.get_ranks("pp")


def main():
    moetune, shared = sys.argv[1:3]
    rank_generator = megatron_rank_generator(shared)
    world = 32
    base = [moetune, "predict", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm",
            "--gpus", str(world), "--seq", "4096", "--gbs", "256", "--mbs", "1"]
    checked = disagree = refused = 0
    for tp, cp, pp, ep, etp in itertools.product((1, 2), (1, 2), (1, 2, 4), (1, 2, 4, 8), (1, 2)):
        layout = ["--tp", str(tp), "--cp", str(cp), "--pp", str(pp), "--ep", str(ep),
                  "--etp", str(etp)]
        plain = subprocess.run(base + layout, capture_output=True, text=True)
        if plain.returncode not in (0, 3):
            continue  # not a valid layout in either order
        outer = subprocess.run(base + layout + ["--dp-outermost"], capture_output=True, text=True)
        by_rule = outer.returncode == 2 and "Megatron-Core: --use-tp-pp-dp-mapping" in outer.stderr
        ok = megatron_accepts(rank_generator, world, tp, cp, pp, ep, etp, "tp-cp-ep-pp-dp")
        default_ok = megatron_accepts(rank_generator, world, tp, cp, pp, ep, etp, "tp-cp-ep-dp-pp")
        checked += 1
        refused += by_rule
        if by_rule == ok or not default_ok:
            disagree += 1
            print("DISAGREE tp=%d cp=%d pp=%d ep=%d etp=%d: moetune %s, Megatron %s "
                  "(default order: Megatron %s) %s" %
                  (tp, cp, pp, ep, etp, "refuses" if by_rule else "accepts",
                   "accepts" if ok else "asserts", "accepts" if default_ok else "asserts",
                   outer.stderr.strip()[:200]))
    print("%d layouts, %d refused by the rule, %d disagree" % (checked, refused, disagree))
    return 1 if disagree or checked == 0 or refused == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
