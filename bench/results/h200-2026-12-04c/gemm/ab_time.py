"""A / B timing of two kernel specs (run3.sh), as ../gemm/parity_time.py (copied, not imported: the
run tool carries this folder alone) with the pair named on the command line: outputs compared bit for
bit, then rounds of back-to-back launches of each (and of A again: the null) between CUDA events, in
rotating orders; median ratio A / B and null / A with a 95 % bootstrap interval. The JSON keeps
parity_time's keys (`linked` = A, `one_unit` = B).

    python ab_time.py M,M,... OUT.json A_SPEC B_SPEC [A_SPEC B_SPEC ...]
"""

import json
import random
import sys

import gemm_swiglu_persistent as h
import torch

ROUNDS, REPS, WARMUP = 30, 10, 5


def med(v):
    s = sorted(v)
    return s[len(s) // 2]


def ci(v):
    rng = random.Random(0)
    meds = sorted(med([rng.choice(v) for _ in v]) for _ in range(2000))
    return [meds[50], meds[1949]]


shapes = [int(v) for v in sys.argv[1].split(",")]
pairs = list(zip(sys.argv[3::2], sys.argv[4::2], strict=True))
variants = {}
for spec in sys.argv[3:]:
    name = h.parse_spec(spec).variant
    variants.setdefault(name, h.Variant(h.Path("cubins"), name))
out = []
for m in shapes:
    prob = h.Problem(m, 2 * 14336, 4096, seed=1000 + m)
    for lk_spec, ou_spec in pairs:
        lk, ou = h.parse_spec(lk_spec), h.parse_spec(ou_spec)
        if lk.shapes is not None and m not in lk.shapes:
            continue
        launches = {
            "linked": h.Launch(variants[lk.variant], lk.mode, prob, lk.raster or 8, lk),
            "one_unit": h.Launch(variants[ou.variant], ou.mode, prob, ou.raster or 8, ou),
            "null": h.Launch(variants[lk.variant], lk.mode, prob, lk.raster or 8, lk),
        }
        outs = {}
        for name, fn in launches.items():
            fn.out_full.zero_()
            fn()
            torch.cuda.synchronize()
            outs[name] = fn.out.clone()
        identical = torch.equal(outs["linked"].view(torch.int16), outs["one_unit"].view(torch.int16))
        for fn in launches.values():
            for _ in range(WARMUP):
                fn()
        names = list(launches)
        orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
        times = {n: [] for n in names}
        for r in range(ROUNDS):
            for i in orders[r % 6]:
                fn = launches[names[i]]
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(REPS):
                    fn()
                b.record()
                torch.cuda.synchronize()
                times[names[i]].append(a.elapsed_time(b) / REPS)
        ratio = [x / y for x, y in zip(times["linked"], times["one_unit"], strict=True)]
        null = [x / y for x, y in zip(times["null"], times["linked"], strict=True)]
        row = {
            "m": m,
            "linked": lk_spec,
            "one_unit": ou_spec,
            "identical_outputs": identical,
            "linked_ms": med(times["linked"]),
            "one_unit_ms": med(times["one_unit"]),
            "ratio": med(ratio),
            "ratio_ci": ci(ratio),
            "null": med(null),
            "null_ci": ci(null),
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    del prob
    torch.cuda.empty_cache()
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1)
