"""Small compositions with one tensor connection each, written for the tensor-link tests.

A producer role of one warp holds a 16x8 ``u32`` tile as an ``mma.m16n8`` accumulator
(thread ``t`` holds rows ``t / 4`` and ``t / 4 + 8``, columns ``2 * (t % 4)`` and the
next) and calls its export handle; the importing role calls its import handle for
every chunk and writes each delivered register to ``out``. Element ``(m, n)`` of block
``b`` holds :func:`value` — a bit pattern, so a conversion anywhere would show.

- ``copy`` / ``shuffle``: the import runs in the producer's own role (one stage that
  exports and imports), demanding the registers permuted (a register copy) or the
  tile of lane ``t ^ 1`` (a warp shuffle);
- ``staging`` / ``staging-chunk``: another stage's role of one warp imports it row by
  row, staging through a claim it lends: the whole tile (one barrier), or half of it,
  chunk by chunk (two barriers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packing.pack import pack

MASK = 0xFFFFFFFF
PLACEMENT = """m = t / 4 + 8 * (r / 2)
            n = 2 * (t % 4) + r % 2"""


def value(m: int, n: int, block: int) -> int:
    """The bits the producer holds for element ``(m, n)`` in block ``block`` (as its CUDA computes them)."""
    return ((m * 8 + n) * 2654435761 + block * 7919) & MASK


@dataclass(frozen=True)
class Case:
    """One connection: the demand (contract text and its host evaluation) and what it should route through."""

    name: str
    rung: str
    demand_params: str
    demand: str
    regs: int
    chunks: int
    element: Callable[[int, int, int], tuple[int, int]]  # (thread, register, chunk) -> (m, n)
    scratch: int | None = None  # bytes the consumer lends; None: the import runs in the producer's role

    @property
    def same_role(self) -> bool:
        return self.scratch is None

    @property
    def threads(self) -> int:
        return 32 if self.same_role else 64

    def expected(self, blocks: int) -> list[int]:
        """What ``out`` holds after ``blocks`` blocks: ``out[((b * 32 + t) * chunks + c) * regs + j]``."""
        return [
            value(*self.element(t, j, c), b)
            for b in range(blocks)
            for t in range(32)
            for c in range(self.chunks)
            for j in range(self.regs)
        ]


def _xor1(t: int) -> int:
    return t ^ 1


CASES = {
    "copy": Case(
        "copy",
        "register-copy",
        "t: 32, r: 4",
        """m = t / 4 + 8 * (r % 2)
            n = 2 * (t % 4) + r / 2""",
        4,
        1,
        lambda t, r, c: (t // 4 + 8 * (r % 2), 2 * (t % 4) + r // 2),
    ),
    "shuffle": Case(
        "shuffle",
        "warp-shuffle",
        "t: 32, r: 4",
        """m = (t + 1 - 2 * (t % 2)) / 4 + 8 * (r / 2)
            n = 2 * ((t + 1 - 2 * (t % 2)) % 4) + r % 2""",
        4,
        1,
        lambda t, r, c: (_xor1(t) // 4 + 8 * (r // 2), 2 * (_xor1(t) % 4) + r % 2),
    ),
    "staging": Case(
        "staging",
        "smem-staging",
        "t: 32, r: 4",
        """m = t / 2
            n = 4 * (t % 2) + r""",
        4,
        1,
        lambda t, r, c: (t // 2, 4 * (t % 2) + r),
        scratch=512,
    ),
    "staging-chunk": Case(
        "staging-chunk",
        "smem-staging",
        "t: 32, p: 2, c: 2",
        """m = t / 2
            n = 4 * c + 2 * (t % 2) + p""",
        2,
        2,
        lambda t, p, c: (t // 2, 4 * c + 2 * (t % 2) + p),
        scratch=256,
    ),
}

_EXPORT = """    export tensor tile from role mma {{
        elem u32
        tile m 16 n 8
        generation once
        placement regs(t: 32, r: 4) -> (m, n) {{
            {placement}
        }}
        ready event got.ready
    }}"""
_IMPORT = """    import tensor got from tile into role {role} {{
        elem u32
        tile m 16 n 8{chunk}
        demand regs({params}) -> (m, n) {{
            {demand}
        }}{lends}
        done event got.done
    }}"""
_HEAD = """stage "{stage}" version "1.0.0" {{
    target sm_90a
    role {role} entry {entry} warps 1
    launch fixed threads {threads}
    params OutParams size 8 align 8 {{
        out: ptr @ 0
    }}"""
_PRODUCE = """    unsigned held[4];
    for (unsigned r = 0; r < 4; ++r) {{
        const unsigned m = t / 4 + 8 * (r / 2), n = 2 * (t % 4) + r % 2;
        held[r] = (m * 8 + n) * 2654435761u + blockIdx.x * 7919u;
    }}
    kl_{prefix}_tile_export(held);"""
_CONSUME = """    for (int c = 0; c < {chunks}; ++c) {{
        unsigned dst[{regs}];
        kl_{prefix}_got_import({held}, dst, c);
        for (unsigned j = 0; j < {regs}; ++j) params->out[((blockIdx.x * 32 + t) * {chunks} + c) * {regs} + j] = dst[j];
    }}"""


def _source(stage: str, role: str, entry: str, body: list[str], exports: bool, imports: bool) -> str:
    prefix = stage.replace(".", "_")
    lines = [
        f"// {stage}: written for tests/link/test_tensor_link.py (see tests/link/tensor_cases.py)",
        f'extern "C" __device__ unsigned kl_{prefix}_{role}_warp0();',
    ]
    if exports:
        lines.append(f'extern "C" __device__ void kl_{prefix}_tile_export(const unsigned* held);')
    if imports:
        lines.append(
            f'extern "C" __device__ void kl_{prefix}_got_import(const unsigned* held, unsigned* dst, int chunk);'
        )
    lines += [
        "struct OutParams { unsigned* out; };",
        f'extern "C" __device__ void {entry}(const OutParams* params, unsigned char* /*smem*/) {{',
        f"    const unsigned t = threadIdx.x - 32u * kl_{prefix}_{role}_warp0();",
        *body,
        "}",
        "",
    ]
    return "\n".join(lines)


def _import(case: Case, role: str) -> str:
    chunk = "\n        chunk n 4" if case.chunks > 1 else ""
    lends = "\n        lends smem scratch" if case.scratch is not None else ""
    return _IMPORT.format(role=role, chunk=chunk, params=case.demand_params, demand=case.demand, lends=lends)


def build_case(case: Case, root: Path) -> Path:
    """Write the case's contracts, sources and pipeline under ``root/<name>``, pack them; the pipeline."""
    folder = root / case.name
    (folder / "build").mkdir(parents=True, exist_ok=True)
    export = _EXPORT.format(placement=PLACEMENT)
    files: dict[str, tuple[str, str]] = {}
    if case.same_role:
        head = _HEAD.format(stage="xfer.solo", role="mma", entry="xfer_solo_main", threads=case.threads)
        body = [
            _PRODUCE.format(prefix="xfer_solo"),
            _CONSUME.format(chunks=case.chunks, regs=case.regs, prefix="xfer_solo", held="held"),
        ]
        files["solo"] = (
            "\n".join([head, export, _import(case, "mma"), "}", ""]),
            _source("xfer.solo", "mma", "xfer_solo_main", body, True, True),
        )
    else:
        head = _HEAD.format(stage="xfer.prod", role="mma", entry="xfer_prod_main", threads=case.threads)
        files["prod"] = (
            "\n".join([head, export, "}", ""]),
            _source("xfer.prod", "mma", "xfer_prod_main", [_PRODUCE.format(prefix="xfer_prod")], True, False),
        )
        head = _HEAD.format(stage="xfer.cons", role="epi", entry="xfer_cons_main", threads=case.threads)
        claim = f"    claim smem scratch bytes {case.scratch} align 16 lifetime between got.ready got.done"
        body = [_CONSUME.format(chunks=case.chunks, regs=case.regs, prefix="xfer_cons", held="nullptr")]
        files["cons"] = (
            "\n".join([head, claim, _import(case, "epi"), "}", ""]),
            _source("xfer.cons", "epi", "xfer_cons_main", body, False, True),
        )
    uses = []
    for name, (contract, source) in files.items():
        (folder / f"{name}.kc").write_text(contract)
        (folder / f"{name}.cu").write_text(source)
        pack(folder / f"{name}.cu", folder / f"{name}.kc", folder / "build" / f"{name}.kpkg")
        stage = contract.split('"')[1]
        uses.append(f'    use "{stage}" version ^1.0 from "build/{name}.kpkg"')
    pipeline = folder / "xfer.kp"
    pipeline.write_text(
        "\n".join([f'pipeline "xfer_{case.name.replace("-", "_")}" {{', "    target sm_90a", *uses, "}", ""])
    )
    return pipeline
