"""The bounded unrolling of a protocol into per-role event sequences (used by the SMT model).

Every role runs its prologue (each ``prearm`` step once per slot of its ring) and then
``bound`` iterations of its program. A named-barrier ``bar.sync`` becomes two events:
its arrival and its wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.protocol.model import BarrierKind, Op, Protocol, Step

SYNC_ARRIVE = "arrive"
SYNC_WAIT = "wait"


@dataclass(frozen=True)
class ObjKey:
    """A physical synchronization object: one mbarrier slot, a counter or a named barrier."""

    channel: str
    barrier: BarrierKind | None = None
    slot: int | None = None

    def __str__(self) -> str:
        if self.barrier is None:
            return self.channel
        return f"{self.channel}.{self.barrier.value}[{self.slot}]"


@dataclass(frozen=True)
class Event:
    """One executed instance of a step.

    ``rank`` is the role's index (it breaks ties in the global order), ``pos`` the
    event's index in its role's sequence, ``step_index`` the step's index in the role's
    program, ``iteration`` the loop iteration (``-1`` in the prologue), ``data`` the data
    iteration whose slot the step touches (``None`` for pre-arms and non-ring steps),
    ``use`` how often that slot was used before it, ``parity`` a wait instance's parity and
    ``threshold`` a counter wait's target value.
    """

    id: int
    role: str
    rank: int
    pos: int
    step: Step
    step_index: int
    iteration: int
    data: int | None
    obj: ObjKey | None
    slot: int | None = None
    use: int | None = None
    parity: int | None = None
    threshold: int | None = None
    part: str = ""

    @property
    def op(self) -> Op:
        return self.step.op

    @property
    def is_wait(self) -> bool:
        """Whether the role can block at this event."""
        if self.op is Op.BAR_SYNC:
            return self.part == SYNC_WAIT
        return self.op in (Op.WAIT, Op.WAIT_GE)

    def label(self) -> str:
        """A short description: step text, iteration and part."""
        where = "prologue" if self.iteration < 0 else f"iteration {self.iteration}"
        part = f" ({self.part})" if self.part else ""
        return f"`{self.step.provenance.text}`{part} in {where}"


def unroll(protocol: Protocol, bound: int) -> list[list[Event]]:
    """Per role (in declaration order), the sequence of events of a ``bound``-iteration run."""
    if bound < 1:
        raise ValueError("the bound is at least one iteration")
    sequences: list[list[Event]] = []
    for rank, role in enumerate(protocol.roles):
        sequences.append(_unroll_role(protocol, role.name, rank, bound, sum(len(s) for s in sequences)))
    return sequences


def _unroll_role(protocol: Protocol, role: str, rank: int, bound: int, first_id: int) -> list[Event]:
    program = protocol.program(role)
    seq: list[Event] = []

    def emit(
        step: Step,
        k: int,
        iteration: int,
        data: int | None,
        obj: ObjKey | None,
        slot: int | None = None,
        use: int | None = None,
        parity: int | None = None,
        threshold: int | None = None,
        part: str = "",
    ) -> None:
        seq.append(
            Event(
                first_id + len(seq),
                role,
                rank,
                len(seq),
                step,
                k,
                iteration,
                data,
                obj,
                slot,
                use,
                parity,
                threshold,
                part,
            )
        )

    for k, step in enumerate(program):
        if step.prearm:
            for slot in range(protocol.ring(step.channel).depth):
                emit(step, k, -1, None, ObjKey(step.channel, step.barrier, slot), slot)
    for i in range(bound):
        for k, step in enumerate(program):
            j = i - step.lag
            if step.prearm or j < 0:
                continue
            if step.op in (Op.ADD, Op.WAIT_GE):
                threshold = step.count * (j + 1) if step.op is Op.WAIT_GE else None
                emit(step, k, i, None, ObjKey(step.channel), threshold=threshold)
            elif step.op is Op.BAR_ARRIVE:
                emit(step, k, i, None, ObjKey(step.channel))
            elif step.op is Op.BAR_SYNC:
                emit(step, k, i, None, ObjKey(step.channel), part=SYNC_ARRIVE)
                emit(step, k, i, None, ObjKey(step.channel), part=SYNC_WAIT)
            else:
                depth = protocol.ring(step.channel).depth
                slot, use = j % depth, j // depth
                obj = ObjKey(step.channel, step.barrier, slot) if step.barrier else None
                parity = None if step.parity is None else step.parity ^ (use & 1)
                emit(step, k, i, j, obj, slot, use, parity)
    return seq
