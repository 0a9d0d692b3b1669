"""Issue 27: the contract oracle against `kernlink check` on random multi-CTA protocols.

Draws :func:`tests.fuzzing.multi_cta.draw` protocols (grid counters, 2-CTA clusters, named
barriers) from one seed until ``--draws`` of them got a protocol verdict from the checker, judges
each with ``kernlink.api.check`` and with ``fuzzing.contract_oracle.problems_of`` (its own reading
of the contracts, at the stated depth) and counts: agree (both safe, or both unsafe: a code among
L-ARRIVE, L-TXBYTES, L-PARITY, L-RACE, L-DEADLOCK), disagree (each text kept), unverified (the
oracle's reason). Draws the checker rejects for another code are counted and not compared.

    PYTHONPATH=. nice -n 10 python bench/oracle_agreement.py --draws 10000 --seed 27 --out DIR
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # before bench/, whose placement.py is not the package

from fuzzing.contract_oracle import TooLarge, problems_of, unmodelled  # noqa: E402
from kernlink.api import check  # noqa: E402
from tests.fuzzing.multi_cta import draw  # noqa: E402

PROTOCOL = {"L-ARRIVE", "L-TXBYTES", "L-PARITY", "L-RACE", "L-DEADLOCK"}
UNSAFE = {"L-RACE", "L-DEADLOCK"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--max-states", type=int, default=300_000)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    counts: Counter[str] = Counter()
    folder = Path(tempfile.mkdtemp())
    path = folder / "draw.kc"
    start = time.monotonic()
    drawn = 0
    while counts["compared"] < args.draws:
        protocol = draw(rng)
        drawn += 1
        text = protocol.text()
        path.write_text(text)
        result = check([str(path)])
        codes = {str(getattr(d.code, "value", d.code)) for d in result.diagnostics if d.is_error}
        comp = result.composition
        if codes - PROTOCOL or comp is None:
            counts["not compared: " + ", ".join(sorted(codes - PROTOCOL) or ["no composition"])] += 1
            continue
        counts["compared"] += 1
        features = protocol.features()
        for f in features:
            counts[f"with a {f}"] += 1
        counts[f"features: {' + '.join(features)}"] += 1
        why = unmodelled(comp)
        found: set[str] | None = None
        if why is None:
            try:
                found = {
                    p.split(":", 1)[0] for p in problems_of(comp, {"ab": protocol.depth}, max_states=args.max_states)
                }
            except TooLarge:
                why = f"more than {args.max_states} states"
        if found is None:
            counts[f"unverified: {why}"] += 1
            continue
        checker = codes & PROTOCOL
        if bool(checker) != bool(found):
            counts["disagree"] += 1
            name = args.out / "disagreements" / f"{drawn:05d}.kc"
            name.parent.mkdir(exist_ok=True)
            name.write_text(f"# draw {drawn}: checker {sorted(checker)}, oracle {sorted(found)}\n# {protocol}\n{text}")
            continue
        counts["agree"] += 1
        counts["agree: both unsafe" if checker else "agree: both safe"] += 1
        if protocol.remote_release:  # the remote arrive right, run on the other rank, or missing
            verdict = "both unsafe" if checker else "both safe"
            counts[f"agree, remote arrive {protocol.remote_arrive}: {verdict}"] += 1
        if checker:
            counts["same codes" if checker == found else "other codes"] += 1
            same = (checker & UNSAFE) == (found & UNSAFE)
            counts["same deadlock/race verdict" if same else "other deadlock/race verdict"] += 1
            if not same:  # both unsafe, for other reasons: kept to be read
                name = args.out / "differences" / f"{drawn:05d}.kc"
                name.parent.mkdir(exist_ok=True)
                head = f"# draw {drawn}: checker {sorted(checker)}, oracle {sorted(found)}\n# {protocol}\n"
                name.write_text(head + text)
            for code in sorted(checker):
                counts[f"checker {code}"] += 1
            for code in sorted(found):
                counts[f"oracle {code}"] += 1
        if counts["compared"] % 500 == 0:
            print(
                f"{counts['compared']} compared, {drawn} drawn, {time.monotonic() - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    counts["drawn"] = drawn
    summary = {
        "seed": args.seed,
        "draws": args.draws,
        "max_states": args.max_states,
        "counts": dict(sorted(counts.items())),
    }
    (args.out / "agreement.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(f"wall {time.monotonic() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
