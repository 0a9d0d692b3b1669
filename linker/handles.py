"""Handle values: the constant each handle function returns, from the placement.

The names are the handle ABI's (``package/abi.py``), the bindings and the L-SYMBOL /
L-HANDLE findings the checker's (``checker/handles.py``); this module is the linker's
half: :func:`handle_value` turns one resolved handle into the number the generated stub
returns, with the reason the link map records.

Values follow specs/handles.md:

- shared-memory offsets are bytes from the dynamic shared memory base. The
  placement works in absolute shared addresses from ``smem_user_base`` (1024 on every
  target kernlink knows: the system's reserved kilobyte is below), and the dispatch
  kernel declares no static shared memory, so the dynamic base is shared address
  ``smem_user_base`` (specs/hardware.md §1.2) and an offset is ``address - smem_user_base``;
- a ring's mbarrier array holds ``depth`` full barriers, then ``depth`` empty ones,
  8 bytes apart: ``full_bar`` is the array's offset, ``empty_bar`` is 8 × depth further;
- a fact handle (``P_fact_F``) returns the value the fact's owner fixes (``owns fact F:
  T = v``); an owner that allows a range or a set fixes nothing, and the link says so;
- arrival counts are the initialising side's ``full init`` / ``empty init``, evaluated by
  the plan (:mod:`analysis.link_inputs`) with the composition's role widths (``per_warp(R)``
  is R's warps, ``per_thread(R)`` its threads, ``per_warpgroup(R)`` its warpgroups).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from checker.handles import RING_BARRIER_STRIDE, HandleKind, HandleSpec
from linker.counters import CounterArray, UnplacedCounter, counter_index, plan_counters
from placement.problem import Domain, Problem
from placement.result import Placement, Slot

if TYPE_CHECKING:
    from analysis.link_inputs import LinkInputs

__all__ = ["HandleValue", "Solved", "UnfixedFact", "UnplacedHandle", "handle_value"]


class UnplacedHandle(Exception):
    """A handle whose item the placement does not hold (a kernlink bug or an unsupported item)."""


class UnfixedFact(UnplacedHandle):
    """A fact handle whose owner allows several values: no constant to fold (the caller gives it)."""


@dataclass(frozen=True)
class HandleValue:
    """One handle stub: the symbol, the constant it returns, and why."""

    symbol: str
    value: int
    stage: str
    kind: HandleKind
    item: str
    why: str


@dataclass(frozen=True)
class Solved:
    """What handle values are read from: what the link reads of the composition, its placement problem and
    the placement."""

    inputs: LinkInputs
    problem: Problem
    placement: Placement
    params_offsets: Mapping[str, int]
    counters: CounterArray | None = None

    @property
    def smem_base(self) -> int:
        return self.problem.capacities.smem_user_base


def handle_value(spec: HandleSpec, solved: Solved) -> HandleValue:
    """The constant ``spec`` returns; raises :class:`UnplacedHandle` when nothing placed its item."""
    value, why = _value(spec, solved)
    return HandleValue(spec.symbol, value, spec.stage, spec.kind, spec.item, why)


def _value(spec: HandleSpec, s: Solved) -> tuple[int, str]:
    kind, item = spec.kind, spec.item
    if kind in ("smem", "smem_stride"):
        return _smem(s, spec.stage, item, kind == "smem_stride")
    if kind in ("ring_slot_smem", "ring_slot_stride"):
        owner = _slot_claim_owner(s, item, spec.claim or "")
        value, why = _smem(s, owner, spec.claim or "", kind == "ring_slot_stride")
        return value, f"ring `{item}`: {why} (`{owner}` claims the slots)"
    if kind in ("bar_id", "bar_threads"):
        slot = _barrier(s, spec.stage, item)
        if kind == "bar_id":
            return slot.offset, f"named barrier of `{item}`: {slot.why}"
        return slot.demand, f"threads that take part in barrier {slot.offset} (`{item}`)"
    if kind == "ring_depth":
        ring = next((r for r in s.placement.rings if r.name == item), None)
        if ring is None:
            raise UnplacedHandle(f"ring `{item}` has no depth")
        return ring.depth, f"ring `{item}`: depth in {ring.depth_min}..{ring.depth_max}, {ring.why}"
    if kind in ("ring_full_bar", "ring_empty_bar"):
        array = _mbarriers(s, item)
        depth = array.size // (2 * RING_BARRIER_STRIDE)
        offset = array.offset - s.smem_base
        if kind == "ring_full_bar":
            return offset, f"ring `{item}`: slot 0's full mbarrier (slot i at +8·i)"
        return offset + RING_BARRIER_STRIDE * depth, (
            f"ring `{item}`: slot 0's empty mbarrier, after the {depth} full ones"
        )
    if kind in ("ring_full_count", "ring_empty_count"):
        which = "full" if kind == "ring_full_count" else "empty"
        init = s.inputs.ring_count(spec.stage, item, which)
        if init is None:
            raise UnplacedHandle(f"ring `{item}` of `{spec.stage}` declares no `{which} init`")
        if init.value is None:
            raise UnplacedHandle(init.error)
        return init.value, f"ring `{item}`: `{which} init {init.text}`"
    if kind in ("warp0", "regs"):
        role = next((r for r in s.placement.roles if r.owner == spec.stage and r.name == item), None)
        if role is None:
            raise UnplacedHandle(f"role `{item}` of `{spec.stage}` is not placed")
        if kind == "warp0":
            return role.first_warp, f"role `{item}`: warps {role.first_warp}..{role.end - 1}"
        return role.budget, f"role `{item}`: setmaxnreg budget (minimum {role.minimum})"
    if kind == "tmem":
        column = _find(s, Domain.TMEM, spec.stage, item)
        if column is None:
            raise UnplacedHandle(f"tensor-memory claim `{spec.stage}.{item}` is not placed")
        return column.offset, f"`{item}` at tensor-memory column {column.offset}: {column.why}"
    if kind == "fact":
        return _fact(s, item)
    if kind == "counter":
        try:
            return counter_index(s.counters or plan_counters(s.inputs, s.placement), spec.stage, item)
        except UnplacedCounter as err:
            raise UnplacedHandle(str(err)) from err
    if kind == "cluster_size":
        shape = s.inputs.cluster
        if shape is None:
            raise UnplacedHandle("the pipeline states no cluster shape and the stages accept several")
        return shape[0] * shape[1] * shape[2], f"clusters of {shape[0]}x{shape[1]}x{shape[2]} CTAs"
    if kind == "params_offset":
        if spec.stage not in s.params_offsets:
            raise UnplacedHandle(f"`{spec.stage}` has no params region")
        return s.params_offsets[spec.stage], "the stage's params region in the kernel's params block"
    raise UnplacedHandle(f"handles of kind `{kind}` (`{spec.symbol}`) have no placed value")


def _fact(s: Solved, name: str) -> tuple[int, str]:
    owner = s.inputs.facts.get(name)
    if owner is None:
        raise UnfixedFact(f"no stage owns fact `{name}`")
    if owner.kind != "exact":
        raise UnfixedFact(
            f"`{owner.stage}` owns fact `{name}` as a {owner.kind} of values, so its value is "
            "given at launch, not fixed at link time"
        )
    if owner.pinned:
        return owner.values[
            0
        ], f"fact `{name}` = {owner.values[0]} of its owner `{owner.stage}`, {owner.pinned}: folded"
    return owner.values[0], f"fact `{name}` = {owner.values[0]}, fixed by its owner `{owner.stage}`: folded"


def _smem(s: Solved, owner: str, name: str, stride: bool) -> tuple[int, str]:
    slot = _find(s, Domain.SMEM, owner, name)
    if slot is None:
        raise UnplacedHandle(f"shared-memory claim `{owner}.{name}` is not placed")
    if stride:
        claim = next(c for c in s.problem.smem if c.owner == owner and c.name == name)
        step = s.problem.slot_stride(claim)
        return step, f"`{name}`: {claim.bytes} B per slot rounded up to its alignment {claim.align}"
    return slot.offset - s.smem_base, f"`{name}` at shared address {slot.offset}: {slot.why}"


def _find(s: Solved, domain: Domain, owner: str, name: str) -> Slot | None:
    return next((x for x in s.placement.slots if x.domain is domain and x.owner == owner and x.name == name), None)


def _barrier(s: Solved, stage: str, item: str) -> Slot:
    slot = _find(s, Domain.BARRIER, stage, item)
    if slot is None:
        slot = next(
            (x for x in s.placement.slots if x.domain is Domain.BARRIER and x.name == f"rendezvous.{item}"), None
        )
    if slot is None:
        raise UnplacedHandle(f"barrier `{item}` of `{stage}` is not placed")
    return slot


def _mbarriers(s: Solved, ring: str) -> Slot:
    slot = next(
        (x for x in s.placement.slots if x.domain is Domain.SMEM and x.kind == "mbarriers" and x.ring == ring), None
    )
    if slot is None:
        raise UnplacedHandle(f"the mbarriers of ring `{ring}` are not placed")
    return slot


def _slot_claim_owner(s: Solved, ring: str, claim: str) -> str:
    for c in s.inputs.smem:
        if c.name == claim and c.per_slot == ring:
            return c.stage
    raise UnplacedHandle(f"no stage claims `{claim}` per slot of ring `{ring}`")
