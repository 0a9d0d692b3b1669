"""Inputs of the transfer model: a tensor export, an import of it, and what the consumer lends.

These dataclasses are the transfer model's own view of the contract AST; an adapter
builds them from ``export tensor`` / ``import tensor`` items. Thread positions are CTA
thread indices of the roles *after* warp placement (``threadIdx.x``; blocks are 1-D):
a register route is possible only when the hardware threads coincide, which two
different roles never do.

Chunked imports (``chunk n 32``): the consumer calls the generated import function once
per chunk, with chunk indices ``0, 1, ...`` in order, each call delivering the elements of
that chunk into the registers named by the demand's other variables. The demand's last
variable is the chunk index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from checker.clauses import l_dtype, l_tensor
from diagnostics.model import Diagnostic, Label
from diagnostics.span import UNKNOWN_SPAN, Span
from transfer_model.maps import Chunk, LayoutMap, Tile, tile_size, tile_text

ELEM_BYTES: dict[str, int] = {
    "f32": 4,
    "tf32": 4,
    "i32": 4,
    "u32": 4,
    "f16": 2,
    "bf16": 2,
    "i16": 2,
    "u16": 2,
}
"""Element types the generated transfers move, and their sizes. Moves are bit copies."""


@dataclass(frozen=True)
class RoleThreads:
    """A role's threads in the CTA: ``first .. first + count - 1``, whole warps."""

    first: int
    count: int

    def __post_init__(self) -> None:
        if self.first < 0 or self.first % 32 or self.count < 32 or self.count % 32:
            raise ValueError(f"role threads must be whole warps: first {self.first}, count {self.count}")

    @property
    def end(self) -> int:
        return self.first + self.count

    @property
    def warps(self) -> range:
        """CTA warp indices of the role."""
        return range(self.first // 32, self.end // 32)

    def overlaps(self, other: RoleThreads) -> bool:
        return self.first < other.end and other.first < self.end


@dataclass(frozen=True)
class TensorExport:
    """``export tensor NAME from role ROLE { elem, tile, placement, ready event }``."""

    name: str
    role: str
    elem: str
    tile: Tile
    placement: LayoutMap
    threads: RoleThreads
    generation: str = "once"
    ready_event: str = ""
    span: Span = field(default=UNKNOWN_SPAN, compare=False)
    #: ring-fed, its ring side arriving once per warpgroup: the warpgroups that each synchronise on a
    #: named barrier of 128 threads before one thread arrives for them (linker/ring_fed.py); else 0
    group_barriers: int = 0


@dataclass(frozen=True)
class TensorImport:
    """``import tensor NAME from SOURCE into role ROLE { elem, tile, chunk, demand, done event }``."""

    name: str
    source: str
    role: str
    elem: str
    tile: Tile
    demand: LayoutMap
    threads: RoleThreads
    chunk: Chunk | None = None
    generation: str | None = None
    done_event: str = ""
    span: Span = field(default=UNKNOWN_SPAN, compare=False)
    group_barriers: int = 0  # as the export's, for the importing role's ring side

    @property
    def chunks(self) -> int:
        """Number of import calls (1 when not chunked)."""
        if self.chunk is None:
            return 1
        return dict(self.tile)[self.chunk.dim] // self.chunk.size

    @property
    def register_params(self) -> tuple[tuple[str, int], ...]:
        """Demand variables that index the registers of one call (not the thread, not the chunk)."""
        params = self.demand.params[1:]
        return params[:-1] if self.chunk is not None else params


@dataclass(frozen=True)
class Lends:
    """What the consumer lends a route: shared-memory scratch bytes (None: no ``lends smem``) and registers."""

    smem_bytes: int | None = None
    regs: int = 0


def _label(span: Span, text: str, primary: bool) -> tuple[Label, ...]:
    return () if span == UNKNOWN_SPAN else (Label(span, text, primary),)


def check_identity(export: TensorExport, imp: TensorImport) -> list[Diagnostic]:
    """L-TENSOR and L-DTYPE: the import must name the export, its tile, generation and a valid chunking.

    The clauses word them (``checker.clauses.l_tensor``, ``l_dtype``); this decides them for a seam.
    """
    labels = _label(imp.span, "import here", True) + _label(export.span, "export here", False)
    out: list[Diagnostic] = []

    def tensor(worded: tuple[str, str], data: tuple[tuple[str, str], ...]) -> None:
        out.append(Diagnostic(l_tensor.CODE, worded[0], labels=labels, helps=(worded[1],), data=data))

    if imp.source != export.name:
        tensor(
            l_tensor.other_export(imp.name, imp.source, export.name), (("import", imp.source), ("export", export.name))
        )
    if imp.tile != export.tile:
        shapes = tile_text(imp.tile), tile_text(export.tile)
        worded = l_tensor.tile_mismatch(imp.name, export.name, *shapes, "the producer")
        tensor(worded, (("import", tile_text(imp.tile)), ("export", tile_text(export.tile))))
    if imp.generation is not None and imp.generation != export.generation:
        tensor(
            l_tensor.generation_mismatch(imp.name, export.name, imp.generation, export.generation, "the producer"),
            (("import", imp.generation), ("export", export.generation)),
        )
    if imp.chunk is not None:
        problem = l_tensor.chunk_problem(imp.name, imp.chunk.dim, imp.chunk.size, tile_text(imp.tile), dict(imp.tile))
        if problem is not None:
            tensor(problem, (("chunk", f"{imp.chunk.dim} {imp.chunk.size}"),))
    if imp.elem != export.elem:
        message, help_ = l_dtype.mismatch(imp.name, export.name, imp.elem, export.elem, "the producer", "the consumer")
        out.append(
            Diagnostic(
                l_dtype.CODE,
                message,
                labels=labels,
                notes=(l_dtype.NOTE,),
                helps=(help_,),
                data=(("import", imp.elem), ("export", export.elem)),
            )
        )
    return out


def tile_bytes(tile: Tile, elem: str) -> int:
    return tile_size(tile) * ELEM_BYTES[elem]
