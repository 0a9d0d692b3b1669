"""L-WARPGROUP: a role that runs warpgroup instructions is not a whole, aligned warpgroup.

## What it checks
A role marked `warpgroup` starts at a warp index divisible by 4 and must be a
whole number of warpgroups: its `warps` is a multiple of 4. A role needs that
alignment — it must be marked `warpgroup` and have a multiple of 4 warps — when it
runs an instruction that acts on whole warpgroups:

- a tensor it exports or imports is placed or demanded by a `wgmma_*` or
  `tcgen05_*` library map (the accumulator of `wgmma` / `tcgen05.mma`).

Register budgets (`regs N`) need no alignment of the role: the dispatch kernel runs
`setmaxnreg` for each whole warpgroup before branching to the roles in it, and
roles sharing a warpgroup share its budget. Tensor-memory lane quadrants of a
reader are L-TMEM's.

## Why it matters
A warpgroup is four contiguous warps whose first warp index is divisible by 4
(PTX ISA §9.7.15.1). `wgmma.mma_async` and `setmaxnreg` are executed by all four
warps together; a role of 6 warps, or one packed at warp 1, makes one warpgroup
half role and half something else, and the instruction waits for warps that run
other code; an accumulator layout written for warps 0–3 of a warpgroup is not
where a role packed at warp 1 looks for it.

## Example
```kernlink
stage "gemm.mainloop" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    role mma entry mma_main warps 6 warpgroup
}
```

## Fix
Mark the role `warpgroup` and give it 4 or 8 warps (one or two consumer
warpgroups). A producer that needs only one warp but declares `regs` is written
as a 4-warp warpgroup whose other warps idle, as CUTLASS's producer warpgroup is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from checker.clause import Clause
from checker.composition import Composition, RoleInfo
from checker.report import plural, seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code

WARPGROUP_LIBRARIES = {"wgmma_": "wgmma", "tcgen05_": "tcgen05.mma"}


@dataclass(frozen=True)
class Need:
    """Why a role needs warpgroup alignment: the instruction, and the line that implies it."""

    instruction: str
    span: Span
    label: str


class WarpgroupClause(Clause):
    code = Code.L_WARPGROUP
    name = "warpgroup-alignment"
    summary = "a role that runs warpgroup instructions is not a whole, aligned warpgroup"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        if comp.target is None:
            return
        group = comp.target.warpgroup_warps
        needs = _needs(comp)
        for info in comp.roles.values():
            warps = info.warps
            if warps == 0:
                continue
            whole = warps % group == 0
            role_needs = needs.get(info.name, [])
            if info.role.warpgroup and not whole:
                yield self._width(info, group, role_needs)
            elif role_needs and not info.role.warpgroup:
                yield self._unmarked(info, group, role_needs)

    def _width(self, info: RoleInfo, group: int, needs: list[Need]) -> Diagnostic:
        warps = info.warps
        return seam(
            self.code,
            f"`warpgroup` role `{info.name}` has {warps} warps, not a whole number of warpgroups",
            (info.role.span, f"{plural(warps // group, 'warpgroup')} and {plural(warps % group, 'warp')} over"),
            [(n.span, n.label) for n in needs if n.span != info.role.span],
            notes=(
                f"a warpgroup is {group} contiguous warps starting at a warp index divisible by {group} "
                "(PTX ISA §9.7.15.1)",
                *_instruction_note(needs),
            ),
            helps=(f"give `{info.name}` {_widths(warps, group)} warps",),
            data={"role": info.name, "warps": warps, "warpgroup_warps": group},
        )

    def _unmarked(self, info: RoleInfo, group: int, needs: list[Need]) -> Diagnostic:
        warps = info.warps
        names = list(dict.fromkeys(f"`{n.instruction}`" for n in needs))
        instructions, verb = " and ".join(names), "acts" if len(names) == 1 else "act"
        width = "" if warps % group == 0 else f" and has {plural(warps, 'warp')}"
        fix = "" if warps % group == 0 else f" and give it {_widths(warps, group)} warps"
        return seam(
            self.code,
            f"role `{info.name}` runs {instructions}, which {verb} on whole warpgroups, but is not "
            f"marked `warpgroup`{width}",
            (info.role.span, "not a `warpgroup` role"),
            [(n.span, n.label) for n in needs if n.span != info.role.span],
            notes=(
                f"without `warpgroup` the role may be packed at any warp index; a warpgroup is {group} "
                f"contiguous warps starting at a warp index divisible by {group} (PTX ISA §9.7.15.1)",
                *_instruction_note(needs),
            ),
            helps=(f"mark `{info.name}` `warpgroup`{fix}",),
            data={"role": info.name, "warps": warps, "needs": ",".join(n.instruction for n in needs)},
        )


def _needs(comp: Composition) -> dict[str, list[Need]]:
    needs: dict[str, list[Need]] = {}
    for exp in comp.items(A.ExportTensor):
        need = _library_need(exp.item.placement, f"tensor export `{exp.item.name}`")
        if need is not None:
            needs.setdefault(exp.item.role, []).append(need)
    for imp in comp.items(A.ImportTensor):
        need = _library_need(imp.item.demand, f"tensor import `{imp.item.name}`")
        if need is not None:
            needs.setdefault(imp.item.role, []).append(need)
    return needs


def _library_need(spec: A.MapSpec | None, what: str) -> Need | None:
    if not isinstance(spec, A.LibraryMap):
        return None
    for prefix, instruction in WARPGROUP_LIBRARIES.items():
        if spec.name.startswith(prefix):
            return Need(instruction, spec.span, f"{what} is laid out by `{instruction}` (`{spec.name}`)")
    return None


def _instruction_note(needs: list[Need]) -> list[str]:
    if any(n.instruction == "setmaxnreg" for n in needs):
        return ["`regs` budgets are applied with `setmaxnreg`, which all four warps of a warpgroup execute together"]
    return []


def _widths(warps: int, group: int) -> str:
    lower = warps // group * group
    upper = lower + group
    return f"{lower} or {upper}" if lower else str(upper)
