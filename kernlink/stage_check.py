"""`kernlink check --stage X.kc`: one owner's stage checked alone, open-world.

A stage checked without the rest of its composition is missing what the other stages bring:
the other side of each ring, counter and rendezvous, the owners of the facts it uses, the
providers of its calls, the exporters of the tensors it imports, the roles that fill the
rest of the block, the pipeline's connections and caller buffers. Checked closed-world, each
absence is an error about this stage. Under ``--stage`` each becomes an assumption
(``I-ASSUMED``, a note at the item that needs it, saying what another stage must provide),
and only the stage's own defects are errors. :func:`assumption` decides which is which
from the finding's code and its structured data; a finding it does not recognise stays an
error (unknown is never accept).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from contract_lang import ast as A
from diagnostics.model import Diagnostic, Severity
from diagnostics.symbols import Code


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def assumption(d: Diagnostic, stages: Sequence[A.Stage]) -> str | None:
    """What another stage must provide for ``d`` not to hold, or None when ``d`` is this stage's own defect."""
    data = dict(d.data)
    if d.code == Code.L_UNPAIRED and data.get("channel"):
        other = {"produce": "consumes", "consume": "produces"}.get(data.get("side", ""), "joins")
        return f"another stage {other} {data.get('kind', 'channel')} `{data['channel']}`"
    if d.code == Code.L_OWNER and data.get("fact"):
        return f"another stage owns fact `{data['fact']}`"
    if d.code == Code.L_UNRESOLVED and data.get("call"):
        return f"another stage provides `{data['call']}`"
    if d.code == Code.L_TENSOR and data.get("absent") == "exporter":
        return f"another stage exports tensor `{data.get('export')}` (imported as `{data['import']}`)"
    if d.code == Code.L_ROLE and data.get("item") and data.get("role"):
        return _role(data["item"], data["role"], stages)
    if d.code == Code.L_WARPS:
        launched, covered = _int(data.get("launched_warps")), _int(data.get("role_warps"))
        if launched is not None and covered is not None and 0 < covered < launched:
            return f"other stages' roles cover the other {launched - covered} of the {launched} warps launched"
        if data.get("stages") == "1" and data.get("absent") == "role":
            return "a stage with roles calls this one"
    if d.code == Code.L_BARRIER and data.get("channel"):
        needed, have = _int(data.get("threads")), _int(data.get("roles"))
        if needed is not None and have is not None and have < needed:
            return f"other stages' roles bring rendezvous `{data['channel']}` to its {needed} threads"
    if d.code == Code.L_PHASE and data.get("absent") == "interpreter":
        return f"another stage interprets phase `{data['phase']}`"
    if d.code == Code.L_LIFETIME and data.get("absent") == "connection":
        return f"the pipeline connects the tensor of event `{data['events']}`"
    if d.code == Code.L_VIEW and data.get("absent") == "caller":
        what = f"domain {data['domain']}" if data.get("domain") else f"buffer `{data.get('buffer')}`"
        return f"the pipeline's caller provides {what}"
    return None


def _role(item: str, role: str, stages: Sequence[A.Stage]) -> str | None:
    """A role an item names that no stage declares: another stage's, unless this stage runs the item by it."""
    named = re.fullmatch(r"(\w+) `([^`]+)`", item)
    for stage in stages:
        if role in {r.name for r in stage.of(A.Role)}:
            return None
        for ring in stage.of(A.Ring):
            if named is not None and named.group(1) == "ring" and ring.name == named.group(2) and ring.role == role:
                return None  # the ring's own side is run by the missing role: a misspelling here
    return f"another stage declares role `{role}`"


def split(diags: Sequence[Diagnostic], stages: Sequence[A.Stage]) -> list[Diagnostic]:
    """``diags`` with each finding about what other stages provide made an ``I-ASSUMED`` note."""
    out = []
    for d in diags:
        said = assumption(d, stages) if d.is_error else None
        if said is None:
            out.append(d)
            continue
        primary = d.primary
        out.append(
            Diagnostic(
                Code.I_ASSUMED,
                f"assumed of the other stages: {said}",
                severity=Severity.NOTE,
                labels=(dataclasses.replace(primary, text=primary.text or "needs it"),) if primary else (),
                notes=(f"checked alone this is {d.code}: {d.message}",),
                helps=("check the composition (`kernlink check PIPELINE.kp`) to decide it",),
                data=(("assumes", said), ("instead_of", d.code)),
            )
        )
    return out
