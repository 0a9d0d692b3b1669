"""A contract's params blocks against the layouts the compiler gave their structs (L-PARAMS's decider).

One comparison, used where a package's captured layout meets its contract: by the clause
at check time (``checker/clauses/l_params.py``, which words every problem) and by
``kernlink pack`` right after the capture (its warnings, worded by the same clause).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contract_lang import ast as A
from hardware.targets import field_size
from package.captured import Captured, CapturedParams

Problem = Literal["missing-struct", "size", "align", "missing-field", "offset", "field-size", "undeclared-field"]


@dataclass(frozen=True)
class ParamsProblem:
    """One disagreement between a contract's params block and the captured layout of its struct.

    ``declared``/``captured`` are the values that differ (size, alignment, a field's offset or,
    when only that differs, its bytes); a misplaced field also carries both placements as
    (offset, bytes), and a missing field the compiled struct's field names.
    """

    params: str
    problem: Problem
    field: str | None
    declared: int | None
    captured: int | None
    node: A.Node
    declared_place: tuple[int, int] | None = None
    captured_place: tuple[int, int] | None = None
    compiled_fields: tuple[str, ...] = ()


def params_problems(stage: A.Stage, captured: Captured) -> list[ParamsProblem]:
    """Every way the stage's params blocks disagree with the captured layouts (a missing struct too)."""
    layouts = {p.name: p for p in captured.params_layouts}
    found: list[ParamsProblem] = []
    for block in stage.items:
        if isinstance(block, A.Params):
            found += block_problems(block, layouts.get(block.name))
    return found


def block_problems(block: A.Params, layout: CapturedParams | None) -> list[ParamsProblem]:
    """Every way one params block disagrees with its struct's captured layout (None: no such struct)."""
    if layout is None:
        return [ParamsProblem(block.name, "missing-struct", None, None, None, block)]
    found: list[ParamsProblem] = []
    if block.size != layout.size:
        found.append(ParamsProblem(block.name, "size", None, block.size, layout.size, block))
    if block.align != layout.align:
        found.append(ParamsProblem(block.name, "align", None, block.align, layout.align, block))
    fields = {name: (offset, nbytes) for name, offset, nbytes in layout.fields}
    for fld in block.fields:
        if fld.name not in fields:
            found.append(
                ParamsProblem(block.name, "missing-field", fld.name, None, None, fld, compiled_fields=tuple(fields))
            )
            continue
        offset, got = fields[fld.name]
        size = field_size(fld.type) or 1
        if (offset, got) != (fld.offset, size):
            moved = offset != fld.offset
            found.append(
                ParamsProblem(
                    block.name,
                    "offset" if moved else "field-size",
                    fld.name,
                    fld.offset if moved else size,
                    offset if moved else got,
                    fld,
                    (fld.offset, size),
                    (offset, got),
                )
            )
    named = {f.name for f in block.fields}
    for name, offset, nbytes in layout.fields:
        if name not in named:
            found.append(ParamsProblem(block.name, "undeclared-field", name, None, None, block, None, (offset, nbytes)))
    return found


__all__ = ["ParamsProblem", "block_problems", "params_problems"]
