"""The stale-upgrade study on moe4's contracts: what kernlink decides when one owner changes one constant.

    python bench/stale_facts.py [--json FILE]

`specs/examples/moe4` has four owners (interpreter, communication, grouped GEMM, activation)
and facts flowing between them. The study (issue 17) takes single-constant upgrades of one
owner and asks, for each, what a plain symbol link would run and what kernlink does:

- UPGRADES: five single-constant upgrades. kernlink either relinks them (the fact reaches
  every consumer: folded through a fact handle, written into a params field, or a depth the
  linker chooses) or, where a consumer compiled the fact in (`assumes`), rejects the
  combination with L-FACT naming both sides;
- INCOMPATIBLE: seven combinations that no link may accept, each rejected before anything
  runs by the named clause.

This script runs kernlink's side on the contracts (check and place, CPU only): each edit is
applied to a copy of the example, the pipeline checked, and the verdict printed with the
clauses. The symbol-link and GPU columns need moe4's real components, which are not written
yet (issue 17 item 2); the table says so instead of guessing. Exit status 1 when a verdict
differs from the one the catalogue expects.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernlink.api import check  # noqa: E402

EXAMPLE = ROOT / "specs" / "examples" / "moe4"


@dataclass(frozen=True)
class Edit:
    """One owner's one-constant change: ``old`` becomes ``new`` in ``file``; ``expect`` the first error's clause
    (None: kernlink accepts and relinks)."""

    name: str
    owner: str
    file: str
    old: str
    new: str
    expect: str | None
    why: str


UPGRADES = (
    Edit("dispatch tile 512 -> 256", "moe.comm", "comm.kc", "owns fact dispatch_nb: u32 = 512",
         "owns fact dispatch_nb: u32 = 256", "L-FACT",
         "moe.gemm takes it as a param (written at launch), but moe.act compiled `dispatch_nb == 512` in"),
    Edit("expert count 8 -> 4", "moe.interp", "interp.kc", "owns fact num_experts: u32 = 8",
         "owns fact num_experts: u32 = 4", None, "moe.gemm and moe.interp read it as a param the linker writes"),
    Edit("expert count 8 -> 16", "moe.interp", "interp.kc", "owns fact num_experts: u32 = 8",
         "owns fact num_experts: u32 = 16", None, "still within moe.gemm's `requires fact num_experts <= 16`"),
    Edit("ring h depth 2..4 -> 2", "moe.gemm", "gemm.kc", "depth 2..4", "depth 2", None,
         "moe.act reads the depth and the barriers through handles the linker folds"),
    Edit("act_in slot 16KiB -> 8KiB", "moe.gemm", "gemm.kc", "claim smem act_in bytes 16KiB",
         "claim smem act_in bytes 8KiB", None, "moe.act reaches the slots through kl_moe_act_h_act_in_smem/_stride"),
)

INCOMPATIBLE = (
    Edit("dispatch_nb becomes u64", "moe.comm", "comm.kc", "owns fact dispatch_nb: u32 = 512",
         "owns fact dispatch_nb: u64 = 512", "L-FACT", "a dtype its u32 consumers cannot take"),
    Edit("32 experts", "moe.interp", "interp.kc", "owns fact num_experts: u32 = 8",
         "owns fact num_experts: u32 = 32", "L-ASSUME", "above moe.gemm's `requires fact num_experts <= 16`"),
    Edit("staging 96KiB -> 200KiB", "moe.comm", "comm.kc", "claim smem staging bytes 96KiB",
         "claim smem staging bytes 200KiB", "L-OVERLAP", "the block's shared memory no longer holds every claim"),
    Edit("expert regs 216 -> 240", "moe.gemm", "gemm.kc", "warps 8 regs 216 warpgroup",
         "warps 8 regs 240 warpgroup", "L-REGS", "the register groups exceed the CTA's pool"),
    Edit("no expert phase", "moe.interp", "interp.kc", "phases exclusive dispatch, expert, combine",
         "phases exclusive dispatch, combine", "L-PHASE", "moe.comm and moe.gemm assume an exclusive `expert` phase"),
    Edit("tokens_ready at sys scope", "moe.comm", "comm.kc", "counter tokens_ready produce by comm scope gpu",
         "counter tokens_ready produce by comm scope sys", "L-PAIR", "the consumer acquires at gpu scope"),
    Edit("act releases per thread", "moe.act", "act.kc", "empty arrive per_warp(act)",
         "empty arrive per_thread(act)", "L-ARRIVE", "ring h's empty barrier is initialised for one arrival per warp"),
)


@dataclass(frozen=True)
class Verdict:
    edit: Edit
    accepted: bool
    codes: tuple[str, ...]
    first: str

    @property
    def as_expected(self) -> bool:
        return (self.accepted and self.edit.expect is None) or (
            not self.accepted and self.codes[:1] == (self.edit.expect,))


def verdict(edit: Edit, scratch: Path) -> Verdict:
    """Check the example with ``edit`` applied to a copy under ``scratch``."""
    folder = scratch / edit.name.replace(" ", "_").replace(">", "").replace(".", "_")
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("build"))
    path = folder / edit.file
    text = path.read_text(encoding="utf-8")
    if edit.old not in text:
        raise SystemExit(f"{edit.file} no longer contains {edit.old!r}")
    path.write_text(text.replace(edit.old, edit.new, 1), encoding="utf-8")
    result = check([folder / "moe4.kp"])
    errors = [d for d in result.diagnostics if d.is_error]
    accepted = result.accepted and result.downstream is not None and result.downstream.placed is not None
    return Verdict(edit, accepted, tuple(d.code for d in errors), errors[0].message if errors else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the verdicts as JSON")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, edits in (("upgrade", UPGRADES), ("incompatible", INCOMPATIBLE)):
            for edit in edits:
                v = verdict(edit, Path(tmp))
                rows.append((kind, v))
    bad = 0
    print(f"{'kind':<13} {'owner':<11} {'edit':<28} {'kernlink (contracts)':<22} symbol link / GPU")
    for kind, v in rows:
        outcome = "checks and places" if v.accepted else f"rejected {v.codes[0]}"
        mark = "" if v.as_expected else f"  (expected {v.edit.expect or 'relink'})"
        bad += not v.as_expected
        print(f"{kind:<13} {v.edit.owner:<11} {v.edit.name:<28} {outcome:<22} not run (no moe4 components){mark}")
    if args.json:
        Path(args.json).write_text(json.dumps([
            {"kind": kind, "name": v.edit.name, "owner": v.edit.owner, "file": v.edit.file, "old": v.edit.old,
             "new": v.edit.new, "accepted": v.accepted, "codes": list(v.codes), "first": v.first,
             "expected": v.edit.expect, "why": v.edit.why} for kind, v in rows], indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
