"""Why the contract oracle and `kernlink check` name different codes for a protocol both find unsafe.

Reads the draws bench/oracle_agreement.py kept (``DIR/differences/*.kc``) and sorts each: the
checker's own protocol model (``checker.protocol``, read here only to explain, never by the
oracle) finds the deadlock too and the checker reports one tier (checker/policy.py
``reported``: a race's hang is its dependent), or the checker stopped at the first trip count
with a finding where the oracle takes every trip count up to the bound. Anything else is printed
as UNEXPLAINED.

    python bench/oracle_differences.py DIR/differences
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # before bench/, whose placement.py is not the package

import fuzzing.contract_oracle as co  # noqa: E402
from checker.protocol.build import build_model  # noqa: E402
from checker.protocol.check import check_protocol  # noqa: E402
from kernlink.api import compose  # noqa: E402

UNSAFE = {"L-RACE", "L-DEADLOCK"}
MAX_STATES = 300_000  # bench/oracle_agreement.py's default budget: the draws kept were judged within it


def per_trip_count(comp: Any, depth: int) -> tuple[set[str], list[set[str]]]:
    """The oracle's codes, and its codes at each trip count in order."""
    runs: list[set[str]] = []
    orig = co._run

    def run(*args: Any, **kwargs: Any) -> set[str]:
        found = orig(*args, **kwargs)
        runs.append({p.split(":", 1)[0] for p in found})
        return found

    co._run = run
    try:
        codes = {p.split(":", 1)[0] for p in co.problems_of(comp, {"ab": depth}, max_states=MAX_STATES)}
    finally:
        co._run = orig
    return codes, runs


def main(folder: str) -> int:
    counts: Counter[str] = Counter()
    for path in sorted(Path(folder).glob("*.kc")):
        text = path.read_text()
        head = re.search(r"checker (\[[^\]]*\])", text)
        depth = re.search(r"depth (\d+)", text)
        assert head is not None and depth is not None, path
        checker = set(ast.literal_eval(head.group(1)))
        _, comp = compose([str(path)])
        assert comp is not None, path
        oracle, runs = per_trip_count(comp, int(depth.group(1)))
        first = next((s for s in runs if s), set()) & UNSAFE
        raw = check_protocol(build_model(comp, {"ab": int(depth.group(1))}).protocol)
        kinds = {type(f).__name__ for f in raw.findings}
        if checker == {"L-RACE"} and "DeadlockWitness" in kinds:
            why = "the checker's model finds the deadlock too; it reports one tier (the race)"
        elif checker & UNSAFE == first:
            alone = " and ".join(sorted(c.removeprefix("L-").lower() for c in first))
            why = f"the checker stops at the first trip count with a finding: the {alone} alone there"
        else:
            why = f"UNEXPLAINED: checker {sorted(checker)}, kinds {sorted(kinds)}, oracle {sorted(oracle)}"
            print(path.name, why)
        counts[why] += 1
        if "L-ARRIVE" in oracle - checker:
            counts["(of these, the oracle also reports more arrivals in a phase than initialized: L-ARRIVE)"] += 1
    for why, n in sorted(counts.items()):
        print(f"{n:5d}  {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
