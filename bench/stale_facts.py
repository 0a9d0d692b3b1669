"""The stale-upgrade study on moe4: what a symbol link runs and what kernlink does when one owner changes one constant.

    python bench/stale_facts.py [--json FILE]                          # the contracts only (CPU)
    python bench/stale_facts.py --build DIR [--tokens 256]             # pack and link every case (CPU)
    python bench/stale_facts.py --run DIR [--grid 8] [--json FILE]     # run the built cases (GPU, PyTorch)

`specs/examples/moe4` has four owners (interpreter, communication, grouped GEMM, activation)
and facts flowing between them. The study (issue 17) takes single-constant upgrades of one
owner and asks, for each, what a plain symbol link runs and what kernlink does:

- UPGRADES: five single-constant upgrades. kernlink relinks them: the fact reaches every
  consumer (folded through a fact handle, written into a params field, or a depth handle).
  Where a consumer compiled the fact in (`assumes`), the same upgrade is rejected with L-FACT
  naming both sides (``assumed``: the consumer's `uses` line replaced by an `assumes`);
- INCOMPATIBLE: seven combinations that no link may accept, each rejected before anything
  runs by the named clause.

With ``--build``, every upgrade is linked three ways, all with ``--watchdog`` (2·10⁷ cycles):
the example as it was (``old``), kernlink's relink after repacking only the changed owner
(``kernlink``), and a *symbol link* (``symbol``): nvJitLink alone over the repacked owner's
object and the unchanged objects with the glue of the old link, only the owner's own handles
new — every consumer keeps the fact as it compiled it (the old link's params). The inputs
(256 tokens, hidden 256, 8 experts, top-2, f16 activations and weights, seed 17) are written
beside them. ``--run`` launches each link with `kernlink run` in a subprocess (a trap ends its
context) and classifies it against a PyTorch reference at the owner's new value: `correct`,
`wrong output` (how many elements, which tokens) or `hang` (the decoded E-HANG ledger).
Exit status 1 when a verdict differs from the catalogue or a kernlink relink is not correct.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernlink.api import check, link  # noqa: E402
from package.manifest import read_stage_package  # noqa: E402
from packing.pack import pack  # noqa: E402
from toolchain.cuda import compile_nvrtc  # noqa: E402
from toolchain.cuda import link as nvjitlink  # noqa: E402

EXAMPLE = ROOT / "specs" / "examples" / "moe4"
COMPONENTS = {"moe.interp": "interp", "moe.comm": "comm", "moe.gemm": "gemm", "moe.act": "act"}
WATCHDOG = 20_000_000
#: The instruction list: dispatch, expert, combine (GRID_SYNC) — see specs/examples/moe4/interp.cu.
PROGRAM = (1, 2, 3 | 0x100)
#: Rows per expert the buffers are sized for: above every capacity of the study, so a stale view
#: indexes memory that exists (a fault would hide what the stale view computes).
ROWS_ALLOCATED = 256


@dataclass(frozen=True)
class Edit:
    """One owner's one-constant change: ``old`` becomes ``new`` in ``file``; ``expect`` the first error's clause
    (None: kernlink accepts and relinks). ``handles``: the owner's own handles in the glue, (symbol, old, new),
    what its repacked object would hold in a symbol link. ``assumed``: (consumer file, its `uses` line, the
    `assumes` line of a consumer that compiled the fact in)."""

    name: str
    owner: str
    file: str
    old: str
    new: str
    expect: str | None
    why: str
    handles: tuple[tuple[str, int, int], ...] = ()
    assumed: tuple[str, str, str] | None = None

    @property
    def slug(self) -> str:
        words = "".join(c if c.isalnum() else " " for c in self.name.replace("->", "to")).split()
        return "_".join(words)


def _uses(fact: str) -> str:
    return f"uses fact {fact}: u32 as param {fact}"


UPGRADES = (
    Edit(
        "dispatch tile 32 -> 16",
        "moe.comm",
        "comm.kc",
        "owns fact tile_rows: u32 = 32",
        "owns fact tile_rows: u32 = 16",
        None,
        "moe.gemm and moe.act take tile_rows as a param the linker writes",
        (("kl_moe_comm_fact_tile_rows", 32, 16),),
        ("act.kc", _uses("tile_rows"), "assumes fact tile_rows: u32 == 32"),
    ),
    Edit(
        "capacity 128 -> 64",
        "moe.comm",
        "comm.kc",
        "owns fact capacity: u32 = 128",
        "owns fact capacity: u32 = 64",
        None,
        "moe.gemm and moe.act take capacity as a param",
        (("kl_moe_comm_fact_capacity", 128, 64),),
        ("gemm.kc", _uses("capacity"), "assumes fact capacity: u32 == 128"),
    ),
    Edit(
        "tokens per signal 8 -> 4",
        "moe.comm",
        "comm.kc",
        "owns fact tokens_per_signal: u32 = 8",
        "owns fact tokens_per_signal: u32 = 4",
        None,
        "moe.gemm takes tokens_per_signal as a param",
        (("kl_moe_comm_fact_tokens_per_signal", 8, 4),),
        ("gemm.kc", _uses("tokens_per_signal"), "assumes fact tokens_per_signal: u32 == 8"),
    ),
    Edit(
        "ring h depth 4 -> 2",
        "moe.gemm",
        "gemm.kc",
        "depth 4",
        "depth 2",
        None,
        "moe.act reads the depth through its own handle, which the linker folds",
        (("kl_moe_gemm_h_depth", 4, 2),),
    ),
    Edit(
        "slot elements 4096 -> 2048",
        "moe.gemm",
        "gemm.kc",
        "owns fact slot_elems: u32 = 4096",
        "owns fact slot_elems: u32 = 2048",
        None,
        "moe.act takes slot_elems as a param",
        (("kl_moe_gemm_fact_slot_elems", 4096, 2048),),
        ("act.kc", _uses("slot_elems"), "assumes fact slot_elems: u32 == 4096"),
    ),
)

INCOMPATIBLE = (
    Edit(
        "activations become f32",
        "moe.comm",
        "comm.kc",
        "owns fact elem_bits: u32 = 16",
        "owns fact elem_bits: u32 = 32",
        "L-FACT",
        "moe.gemm compiled `elem_bits == 16` in (it reads xe as f16)",
    ),
    Edit(
        "capacity 128 -> 16",
        "moe.comm",
        "comm.kc",
        "owns fact capacity: u32 = 128",
        "owns fact capacity: u32 = 16",
        "L-ASSUME",
        "below a dispatch tile: moe.gemm's `requires fact capacity % tile_rows == 0` fails",
    ),
    Edit(
        "staging 16KiB -> 200KiB",
        "moe.comm",
        "comm.kc",
        "claim smem staging bytes 16KiB",
        "claim smem staging bytes 200KiB",
        "L-OVERLAP",
        "the block's shared memory no longer holds every claim",
    ),
    Edit(
        "expert regs 216 -> 240",
        "moe.gemm",
        "gemm.kc",
        "warps 8 regs 216 warpgroup",
        "warps 8 regs 240 warpgroup",
        "L-REGS",
        "the register groups exceed the CTA's pool",
    ),
    Edit(
        "no expert phase",
        "moe.interp",
        "interp.kc",
        "phases exclusive dispatch, expert, combine",
        "phases exclusive dispatch, combine",
        "L-PHASE",
        "moe.comm, moe.gemm and moe.act assume an exclusive `expert` phase",
    ),
    Edit(
        "tokens_ready at sys scope",
        "moe.comm",
        "comm.kc",
        "counter tokens_ready produce by comm scope gpu",
        "counter tokens_ready produce by comm scope sys",
        "L-PAIR",
        "the consumer acquires at gpu scope",
    ),
    Edit(
        "act releases per thread",
        "moe.act",
        "act.kc",
        "empty arrive per_warp(act)",
        "empty arrive per_thread(act)",
        "L-ARRIVE",
        "ring h's empty barrier is initialised for one arrival per warp",
    ),
)


# ----------------------------------------------------------------- the contracts (CPU)


@dataclass(frozen=True)
class CheckOutcome:
    """What the check says about one edit of the bench (accepted, or the codes that reject it)."""

    edit: Edit
    accepted: bool
    codes: tuple[str, ...]
    first: str

    @property
    def as_expected(self) -> bool:
        return (self.accepted and self.edit.expect is None) or (
            not self.accepted and self.codes[:1] == (self.edit.expect,)
        )


def apply(edit: Edit, folder: Path, *, assumed: bool = False) -> None:
    """Apply ``edit`` (and, with ``assumed``, its consumer's `assumes` variant) to the contracts in ``folder``."""
    changes = [(edit.file, edit.old, edit.new)]
    if assumed:
        if edit.assumed is None:
            raise ValueError(f"`{edit.name}` has no consumer that could assume it")
        changes.append(edit.assumed)
    for file, old, new in changes:
        path = folder / file
        text = path.read_text(encoding="utf-8")
        if old not in text:
            raise SystemExit(f"{file} no longer contains {old!r}")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")


def verdict(edit: Edit, scratch: Path, *, assumed: bool = False) -> CheckOutcome:
    """Check the example with ``edit`` applied to a copy under ``scratch``."""
    folder = scratch / (edit.slug + ("_assumed" if assumed else ""))
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("build"))
    apply(edit, folder, assumed=assumed)
    result = check([folder / "moe4.kp"])
    errors = [d for d in result.diagnostics if d.is_error]
    accepted = result.accepted and result.downstream is not None and result.downstream.placed is not None
    return CheckOutcome(edit, accepted, tuple(d.code for d in errors), errors[0].message if errors else "")


# ----------------------------------------------------------------- building the links (CPU)


def pack_all(folder: Path, only: str | None = None) -> Path:
    """Pack the components in ``folder`` (only ``only``'s when given); the pipeline."""
    for stage, name in COMPONENTS.items():
        if only is None or stage == only:
            pack(folder / f"{name}.cu", folder / f"{name}.kc", folder / "build" / f"{name}.kpkg")
    return folder / "moe4.kp"


def kernlink_link(pipeline: Path, out: Path, watchdog: int | None = WATCHDOG) -> Path:
    result = link([pipeline], out, watchdog=watchdog)
    if not result.ok:
        raise SystemExit(f"kernlink link {pipeline} failed: {[f'{d.code}: {d.message}' for d in result.diagnostics]}")
    return out


def symbol_link(old: Path, new_pipeline: Path, edit: Edit, out: Path) -> Path:
    """nvJitLink alone: the repacked owner, the unchanged objects, the old glue with only the owner's handles new."""
    source = (old / "generated.cu").read_text()
    for symbol, before, after in edit.handles:
        was = f"__device__ unsigned {symbol}() {{ return {before}u; }}"
        if was not in source:
            raise SystemExit(f"the old glue has no `{was}`")
        source = source.replace(was, f"__device__ unsigned {symbol}() {{ return {after}u; }}")
    glue = compile_nvrtc(source, "generated.cu", arch="sm_90a")
    build = new_pipeline.parent / "build"
    inputs = [(name, read_stage_package(build / f"{name}.kpkg").lto_ir) for name in COMPONENTS.values()]
    result = nvjitlink([*inputs, ("generated", glue.ltoir)], arch="sm_90a", kernels=["kl_dispatch"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel.cubin").write_bytes(result.cubin)
    (out / "generated.cu").write_text(source)
    # the consumers' view: the old params and facts. A plain symbol link has no manifest to disagree
    # with, so the old one is re-stamped with the new cubin's hash (kernlink's loader checks it).
    record = json.loads((old / "link.json").read_text())
    record["cubin"] = {"sha256": hashlib.sha256(result.cubin).hexdigest(), "size": len(result.cubin)}
    (out / "link.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return out


@dataclass(frozen=True)
class Shape:
    tokens: int = 256
    hidden: int = 256
    experts: int = 8
    top_k: int = 2
    seed: int = 17


def write_inputs(folder: Path, shape: Shape) -> None:
    """Deterministic inputs: x, weights (f16), routing (top_k distinct experts per token), gate (f32), program."""
    rng = random.Random(shape.seed)
    folder.mkdir(parents=True, exist_ok=True)
    x = [rng.uniform(-1.0, 1.0) for _ in range(shape.tokens * shape.hidden)]
    w = [rng.uniform(-0.125, 0.125) for _ in range(shape.experts * shape.hidden * shape.hidden)]
    routing: list[int] = []
    gate: list[float] = []
    for _ in range(shape.tokens):
        routing += rng.sample(range(shape.experts), shape.top_k)
        weights = [rng.uniform(0.1, 1.0) for _ in range(shape.top_k)]
        gate += [g / sum(weights) for g in weights]
    (folder / "x.bin").write_bytes(struct.pack(f"<{len(x)}e", *x))
    (folder / "weights.bin").write_bytes(struct.pack(f"<{len(w)}e", *w))
    (folder / "routing.bin").write_bytes(struct.pack(f"<{len(routing)}I", *routing))
    (folder / "gate.bin").write_bytes(struct.pack(f"<{len(gate)}f", *gate))
    (folder / "program.bin").write_bytes(struct.pack(f"<{len(PROGRAM)}I", *PROGRAM))
    (folder / "shape.json").write_text(json.dumps(shape.__dict__, sort_keys=True) + "\n")


def args_file(directory: Path, inputs: Path, grid: int | None) -> Path:
    """The `kernlink run` arguments of one link: the inputs by relative path, fresh outputs."""
    shape = json.loads((inputs / "shape.json").read_text())
    t, h, e, k = shape["tokens"], shape["hidden"], shape["experts"], shape["top_k"]
    rel = Path(os.path.relpath(inputs, directory))
    spec: dict[str, Any] = {
        "values": {"num_instrs": len(PROGRAM), "tokens": t, "hidden": h},
        "buffers": {
            "program": {"input": str(rel / "program.bin")},
            "x": {"input": str(rel / "x.bin")},
            "routing": {"input": str(rel / "routing.bin")},
            "gate": {"input": str(rel / "gate.bin")},
            "weights": {"input": str(rel / "weights.bin")},
            "xe": {"bytes": e * ROWS_ALLOCATED * h * 2},
            "slots": {"bytes": t * k * 4},
            "ye": {"bytes": e * ROWS_ALLOCATED * h * 4},
            "out": {"bytes": t * h * 4, "output": "out.bin"},
        },
    }
    if grid is not None:
        spec["grid"] = grid
    path = directory / "args.json"
    path.write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    return path


def build_case(root: Path, edit: Edit, inputs: Path) -> dict[str, Path]:
    """Old, kernlink relink and symbol link of one upgrade under ``root``."""
    old_src = root / "src-old"
    shutil.copytree(EXAMPLE, old_src, ignore=shutil.ignore_patterns("build"))
    old = kernlink_link(pack_all(old_src), root / "old")
    new_src = root / "src-new"
    shutil.copytree(old_src, new_src)
    apply(edit, new_src)
    new_pipeline = pack_all(new_src, only=edit.owner)  # repack only the changed owner
    links = {
        "old": old,
        "kernlink": kernlink_link(new_pipeline, root / "kernlink"),
        "symbol": symbol_link(old, new_pipeline, edit, root / "symbol"),
    }
    return links


def build(out: Path, shape: Shape, *, cases: bool = True, grid: int | None = None) -> None:
    """The inputs, moe4 linked plain and with the watchdog, and (``cases``) every upgrade's three links;
    each link directory gets an ``args.json`` for `kernlink run` (``grid`` blocks; None: every SM)."""
    inputs = out / "inputs"
    write_inputs(inputs, shape)
    base = out / "moe4"
    shutil.copytree(EXAMPLE, base / "src", ignore=shutil.ignore_patterns("build"))
    links = [
        kernlink_link(pack_all(base / "src"), base / "plain", watchdog=None),
        kernlink_link(base / "src" / "moe4.kp", base / "watchdog"),
    ]
    for edit in UPGRADES if cases else ():
        links += build_case(out / edit.slug, edit, inputs).values()
        print(f"built {edit.slug}", flush=True)
    for directory in links:
        args_file(directory, inputs, grid)


# ----------------------------------------------------------------- running them (GPU, PyTorch)


def reference(inputs: Path, capacity: int) -> list[float]:
    """out[t] = sum_k gate[t, k] * gelu(x[t] @ W[e(t, k)]) over the kept assignments, in float32 with PyTorch."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    shape = json.loads((inputs / "shape.json").read_text())
    t, h, e, k = shape["tokens"], shape["hidden"], shape["experts"], shape["top_k"]
    dev = "cuda" if torch.cuda.is_available() else "cpu"

    def load(name: str, dtype: Any) -> Any:
        return torch.frombuffer(bytearray((inputs / name).read_bytes()), dtype=dtype).to(dev)

    x = load("x.bin", torch.float16).float().view(t, h)
    w = load("weights.bin", torch.float16).float().view(e, h, h)
    routing = load("routing.bin", torch.int32).long().view(t * k)
    gate = load("gate.bin", torch.float32).view(t * k)
    out = torch.zeros(t, h, dtype=torch.float32, device=dev)
    for expert in range(e):
        chosen = (routing == expert).nonzero().flatten()[:capacity]  # rank order = assignment order
        if chosen.numel() == 0:
            continue
        y = torch.nn.functional.gelu(x[chosen // k] @ w[expert])
        out.index_add_(0, chosen // k, y * gate[chosen].unsqueeze(1))
    return [float(v) for v in out.flatten().cpu().tolist()]


def run(directory: Path, inputs: Path, grid: int | None, capacity: int, timeout: int = 30) -> dict[str, object]:
    """`kernlink run` in a subprocess; the outcome against the reference at ``capacity``."""
    args = args_file(directory, inputs, grid)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kernlink", "run", str(directory), "--args", str(args), "--color", "never"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": "hang", "detail": f"no decoded ledger: killed after {timeout} s"}
    text = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        hang = [line for line in text.splitlines() if "E-HANG" in line]
        return {
            "outcome": "hang" if hang else "error",
            "detail": "; ".join(hang[:3]) if hang else text[-600:],
            "output": text[:4000],
        }
    size = (directory / "out.bin").stat().st_size // 4
    got = struct.unpack(f"<{size}f", (directory / "out.bin").read_bytes())
    want = reference(inputs, capacity)
    hidden = json.loads((inputs / "shape.json").read_text())["hidden"]
    wrong = [
        i
        for i, (g, w) in enumerate(zip(got, want, strict=True))
        if not math.isfinite(g) or abs(g - w) > 1e-3 + 1e-3 * abs(w)
    ]
    if not wrong:
        return {"outcome": "correct", "detail": f"{len(want)} elements within 1e-3 of PyTorch"}
    tokens = sorted({i // hidden for i in wrong})
    first = wrong[0]
    where = f"token {first // hidden}, column {first % hidden}: {got[first]:.6g} for {want[first]:.6g}"
    return {
        "outcome": "wrong output",
        "wrong_elements": len(wrong),
        "wrong_tokens": tokens,
        "detail": f"{len(wrong)} of {len(want)} elements differ, in {len(tokens)} of {len(want) // hidden} tokens "
        f"(first: {where})",
    }


def capacity_of(edit: Edit | None, new: bool) -> int:
    if edit is not None and new and edit.handles[0][0] == "kl_moe_comm_fact_capacity":
        return edit.handles[0][2]
    return 128


def run_all(out: Path, grid: int | None) -> list[dict[str, Any]]:
    inputs = out / "inputs"
    rows: list[dict[str, Any]] = []
    for name, blocks in (("plain", grid), ("watchdog", grid), ("plain", None)):
        label = f"moe4 ({name}, {f'{blocks} blocks' if blocks else 'every SM'})"
        rows.append({"case": label, "outcome": run(out / "moe4" / name, inputs, blocks, 128)})
    for edit in UPGRADES:
        if not (out / edit.slug).is_dir():
            continue  # built with --no-cases
        cap = capacity_of(edit, True)
        rows.append(
            {
                "case": edit.name,
                "owner": edit.owner,
                "symbol_link": run(out / edit.slug / "symbol", inputs, grid, cap),
                "kernlink": run(out / edit.slug / "kernlink", inputs, grid, cap),
            }
        )
    return rows


# ----------------------------------------------------------------- the command


def contracts_table(json_file: str | None) -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, edits in (("upgrade", UPGRADES), ("incompatible", INCOMPATIBLE)):
            for edit in edits:
                rows.append((kind, verdict(edit, Path(tmp))))
                if kind == "upgrade" and edit.assumed is not None:
                    assumed = Edit(
                        f"{edit.name} (assumed)",
                        edit.owner,
                        edit.file,
                        edit.old,
                        edit.new,
                        "L-FACT",
                        f"{edit.assumed[0]} compiled the old value in",
                        edit.handles,
                        edit.assumed,
                    )
                    rows.append(("assumed", verdict(assumed, Path(tmp), assumed=True)))
    bad = 0
    print(f"{'kind':<13} {'owner':<11} {'edit':<36} kernlink (contracts)")
    for kind, v in rows:
        outcome = "checks and places" if v.accepted else f"rejected {v.codes[0]}"
        mark = "" if v.as_expected else f"  (expected {v.edit.expect or 'relink'})"
        bad += not v.as_expected
        print(f"{kind:<13} {v.edit.owner:<11} {v.edit.name:<36} {outcome}{mark}")
    if json_file:
        Path(json_file).write_text(
            json.dumps(
                [
                    {
                        "kind": kind,
                        "name": v.edit.name,
                        "owner": v.edit.owner,
                        "file": v.edit.file,
                        "old": v.edit.old,
                        "new": v.edit.new,
                        "accepted": v.accepted,
                        "codes": list(v.codes),
                        "first": v.first,
                        "expected": v.edit.expect,
                        "why": v.edit.why,
                    }
                    for kind, v in rows
                ],
                indent=2,
            )
            + "\n"
        )
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    parser.add_argument("--build", metavar="DIR", type=Path, help="pack and link every case into DIR (CPU)")
    parser.add_argument("--run", metavar="DIR", type=Path, help="run the cases built in DIR (GPU)")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--no-cases", action="store_true", help="with --build: moe4 alone, no upgrade")
    parser.add_argument("--grid", type=int, default=8, help="blocks per launch (0: every SM)")
    args = parser.parse_args(argv)
    if args.build is not None:
        build(args.build, Shape(tokens=args.tokens), cases=not args.no_cases, grid=args.grid or None)
        return 0
    if args.run is None:
        return contracts_table(args.json)
    rows = run_all(args.run, args.grid or None)
    print(f"{'upgrade':<28} {'symbol link (nvJitLink alone)':<30} kernlink relink")
    ok = True
    for row in rows:
        if "outcome" in row:
            print(f"{row['case']:<28} {row['outcome']['outcome']}  {row['outcome']['detail']}")
            ok &= row["outcome"]["outcome"] == "correct"
            continue
        s, k = row["symbol_link"], row["kernlink"]
        print(f"{row['case']:<28} {s['outcome']:<30} {k['outcome']}")
        for name, r in (("symbol link", s), ("kernlink", k)):
            print(f"    {name}: {r['detail']}")
        ok &= k["outcome"] == "correct"
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
