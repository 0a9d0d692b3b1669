"""Compositions that take long to check, made at test time: each protocol query is cheap, there are many."""

from __future__ import annotations

from pathlib import Path


def rings(folder: Path, count: int = 8, depth: str = "2..32") -> Path:
    """A loader and a consumer stage sharing ``count`` bulk-copy rings of ``depth`` each, and their
    pipeline ``p.kp`` in ``folder``. A depth range restarts the producer's slot index every 3
    iterations (`restart 3`), which the unbounded proof leaves to the bounded model: eight rings of
    depth 2..32 then take about a minute of protocol queries; a fixed depth (no restart) takes seconds."""
    loader = ["target sm_90a", "requires feature mbarrier, cp_async_bulk", "role load entry load_main warps 1"]
    reduce = ["target sm_90a", "requires feature mbarrier", "role reduce entry reduce_main warps 1"]
    for i in range(count):
        loader += [
            f"claim smem s{i} bytes 128 align 128 per_slot r{i} use bulk_copy",
            f"ring r{i} produce by load {{",
            f"    depth {depth}",
            *(["    restart 3"] if ".." in depth else []),
            "    full init 1 expect_tx 128",
            "    empty init per_warp(reduce)",
            "    empty wait",
            "    full arrive 1 tx 128",
            "    full copy 128",
            "    writes async",
            "    init by load fenced",
            "}",
        ]
        reduce += [
            f"ring r{i} consume by reduce {{",
            "    full wait",
            "    reads generic",
            "    fence proxy_async",
            "    empty arrive per_warp(reduce)",
            "}",
        ]
    for name, items in (("loader", loader), ("reduce", reduce)):
        body = "".join(f"    {line}\n" for line in items)
        (folder / f"{name}.kc").write_text(f'stage "big.{name}" version "1.0.0" {{\n{body}}}\n')
    pipeline = folder / "p.kp"
    uses = '    use "big.loader" version ^1.0\n    use "big.reduce" version ^1.0\n'
    pipeline.write_text(f'pipeline "p" {{\n    target sm_90a\n{uses}}}\n')
    return pipeline
