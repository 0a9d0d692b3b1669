"""L-RENDEZVOUS: a tensor connection's ready and done events do not line up with the lifetimes using them.

## What it checks
An import `import tensor c from X …` opens connection `c`. Its events are the
export's `ready event c.<name>` (the tensor is complete) and the import's
`done event c.<name>` (the consumer has finished reading it). The clause requires:

- the export declares a `ready event` (without one nothing says when the tensor is
  complete);
- both events name the connection: `ready event acc.ready` exported to an import
  named `accum` is a different connection (an export several imports read has one
  ready event, named after any one of them: the linker runs all their routes when it
  fires);
- a lifetime that uses the connection's done event (`lifetime between acc.ready
  acc.done`) needs a `done event` on the import;
- shared memory lent to the import (`lends smem S`) is live for the whole transfer,
  from ready to done: the claim's lifetime is `between c.ready c.done`, `until c.done`,
  `from c.ready`, or the whole kernel — a wider lifetime is safe, only wasteful. A
  phase, another connection's interval, or an interval ending at `c.ready` is
  rejected; without a done event only `from c.ready` and the kernel cover the transfer.

Other lifetime defects — an event no connection declares, an interval across two
connections or out of order — are L-LIFETIME's; imports of a tensor no single stage
exports are L-TENSOR's, and a role's second import of one export L-GENERATION's.

## Why it matters
The linker turns the two events into the synchronisation of the generated transfer
and lets claims whose lifetimes are disjoint share shared-memory bytes. If the lent
scratch is only reserved until `c.ready`, the placement hands the same bytes to the
producer's operand ring, and the transfer's staging stores overwrite tiles a
`wgmma` is still reading. A lifetime that ends at an event nobody signals gives the
placement an interval with no end.

## Example
```kernlink
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    export tensor accumulator from role mma {
        elem f32
        tile m 128 n 256
        ready event acc.ready
    }
}
stage "swiglu.epilogue" version "1.0.3" {
    target sm_90a
    role epilogue entry swiglu_epilogue_main warps 4
    # copied from the mainloop's operand claim: free again once the accumulator is ready
    claim smem scratch bytes 16KiB align 16 lifetime until acc.ready
    import tensor acc from accumulator into role epilogue {
        elem f32
        tile m 128 n 256
        lends smem scratch
        done event acc.done
    }
}
```

## Fix
Declare `ready event c.ready` on the export and `done event c.done` on the import,
name both after the import, and give lent scratch the lifetime
`between c.ready c.done`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


@dataclass(frozen=True)
class _Connection:
    imp: Owned[A.ImportTensor]
    exp: Owned[A.ExportTensor]

    @property
    def name(self) -> str:
        return self.imp.item.name

    @property
    def ready(self) -> A.EventRef | None:
        return self.exp.item.ready

    @property
    def done(self) -> A.EventRef | None:
        return self.imp.item.done


class RendezvousClause(Clause):
    code = Code.L_RENDEZVOUS
    name = "tensor-events"
    summary = "a tensor connection's ready and done events do not line up with the lifetimes using them"
    category = "tensors"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        connections: list[_Connection] = []
        seen: set[tuple[str, str, str]] = set()
        for imp in comp.tensor_imports:
            exports = comp.tensor_exports.get(imp.item.export, ())
            key = (imp.stage_name, imp.item.role, imp.item.export)
            if key in seen:
                continue  # a second import of one export into one role is L-GENERATION's
            seen.add(key)
            if len(exports) == 1:
                connections.append(_Connection(imp, exports[0]))
        siblings: dict[int, set[str]] = {}
        for conn in connections:
            siblings.setdefault(id(conn.exp.item), set()).add(conn.name)
        for conn in connections:
            yield from self._events(conn, siblings[id(conn.exp.item)])
            yield from self._lends(conn, set(comp.events))
        yield from self._lifetimes(comp, connections)

    def _events(self, conn: _Connection, fed: set[str]) -> Iterator[Diagnostic]:
        """``fed``: the connections the export feeds; with several (fan-out), one ready event serves all."""
        imp, exp = conn.imp, conn.exp
        if conn.ready is None:
            yield seam(
                self.code,
                f"import `{conn.name}` reads `{exp.item.name}`, whose export declares no `ready event`",
                (imp.span, f"imports `{exp.item.name}`"),
                [(exp.span, f"`{exp.stage_name}` never signals it ready")],
                notes=("without a ready event nothing orders the consumer's reads after the producer's writes",),
                helps=(f"add `ready event {conn.name}.ready` to export `{exp.item.name}`",),
                data={"connection": conn.name, "export": exp.item.name, "problem": "no-ready"},
            )
        elif conn.ready.connection != conn.name and conn.ready.connection not in fed:
            yield seam(
                self.code,
                f"export `{exp.item.name}` signals `{conn.ready}`, but its import is named `{conn.name}`",
                (imp.span, f"connection `{conn.name}`"),
                [(conn.ready.span, f"connection `{conn.ready.connection}`")],
                notes=("a connection's events are named after the import: `<import>.<event>`",),
                helps=(
                    f"write `ready event {conn.name}.{conn.ready.event}` on the export, or name the import "
                    f"`{conn.ready.connection}`",
                ),
                data={"connection": conn.name, "ready": str(conn.ready), "problem": "ready-name"},
            )
        if conn.done is not None and conn.done.connection != conn.name:
            yield seam(
                self.code,
                f"import `{conn.name}` declares `done event {conn.done}`, which belongs to "
                f"connection `{conn.done.connection}`",
                (conn.done.span, f"connection `{conn.done.connection}`"),
                [(imp.span, f"connection `{conn.name}`")],
                helps=(f"write `done event {conn.name}.{conn.done.event}`",),
                data={"connection": conn.name, "done": str(conn.done), "problem": "done-name"},
            )

    def _lends(self, conn: _Connection, known: set[str]) -> Iterator[Diagnostic]:
        claims = {c.name: c for c in conn.imp.stage.stage.items if isinstance(c, A.SmemClaim)}
        for lend in conn.imp.item.lends:
            claim = claims.get(lend.claim or "")
            if lend.kind != "smem" or claim is None or _covers(claim.lifetime, conn, known):
                continue
            ready = f"{conn.name}.{conn.ready.event}" if conn.ready is not None else f"{conn.name}.ready"
            done = str(conn.done) if conn.done is not None else f"{conn.name}.done"
            lifetime = claim.lifetime
            yield seam(
                self.code,
                f"`{conn.imp.stage_name}` lends `{claim.name}` to import `{conn.name}`, but the "
                f"claim's lifetime `{_show(lifetime)}` does not cover `{ready}` to `{done}`",
                (lifetime.span, f"`{claim.name}` is live {_live(lifetime)}"),
                [(lend.span, "lent to the transfer here")],
                notes=(
                    "the generated transfer stages the tensor through lent scratch from the ready event "
                    "to the done event; outside its lifetime the bytes may be given to another claim",
                ),
                helps=(f"write `lifetime between {ready} {done}` on `{claim.name}`",),
                data={"connection": conn.name, "claim": claim.name, "lifetime": _show(lifetime)},
            )

    def _lifetimes(self, comp: Composition, connections: list[_Connection]) -> Iterator[Diagnostic]:
        """Lifetimes ending at the done event of an import that declares none.

        Every other event no connection declares is L-LIFETIME's (an unknown event).
        """
        undone = {c.name: c for c in connections if c.done is None}
        for entry in comp.stages:
            for claim in entry.stage.items:
                if not isinstance(claim, (A.SmemClaim, A.TmemClaim)):
                    continue
                for ref in (claim.lifetime.start, claim.lifetime.end):
                    conn = undone.get(ref.connection) if ref is not None else None
                    if ref is None or conn is None or (conn.ready is not None and ref.event == conn.ready.event):
                        continue
                    yield seam(
                        self.code,
                        f"the lifetime of `{claim.name}` in `{entry.name}` uses `{ref}`, but import "
                        f"`{conn.name}` declares no `done event`",
                        (ref.span, "never signalled"),
                        [(conn.imp.span, f"connection `{conn.name}` opened here")],
                        notes=("the done event is the consumer's: it says the import has finished reading",),
                        helps=(f"add `done event {ref}` to import `{conn.name}` in `{conn.imp.stage_name}`",),
                        data={"connection": conn.name, "event": str(ref), "claim": claim.name},
                    )


def _covers(lifetime: A.Lifetime, conn: _Connection, known: set[str]) -> bool:
    """Whether a claim live for ``lifetime`` is live from the connection's ready to its done event.

    Lifetimes L-LIFETIME rejects (an unknown event, an interval across connections or
    out of order) and connections whose ready event is reported here are not judged.
    """
    if conn.ready is None or conn.ready.connection != conn.name:
        return True
    refs = [r for r in (lifetime.start, lifetime.end) if r is not None]
    if any(str(r) not in known for r in refs):
        return True
    if (
        lifetime.start is not None
        and lifetime.end is not None
        and (
            lifetime.start.connection != lifetime.end.connection
            or lifetime.start == lifetime.end
            or (lifetime.start == conn.done and lifetime.end == conn.ready)
        )
    ):
        return True
    if lifetime.kind == "kernel":
        return True
    if lifetime.kind == "phase":
        return False
    starts = lifetime.start is None or lifetime.start == conn.ready
    ends = lifetime.end is None or (conn.done is not None and lifetime.end == conn.done)
    return starts and ends


def _show(lifetime: A.Lifetime) -> str:
    if lifetime.kind == "kernel":
        return "kernel"
    if lifetime.kind == "phase":
        return f"phase {lifetime.phase}"
    refs = " ".join(str(r) for r in (lifetime.start, lifetime.end) if r is not None)
    return f"{lifetime.kind} {refs}"


def _live(lifetime: A.Lifetime) -> str:
    if lifetime.kind == "phase":
        return f"only in phase `{lifetime.phase}`"
    if lifetime.kind == "between":
        return f"from `{lifetime.start}` to `{lifetime.end}`"
    if lifetime.kind == "until":
        return f"until `{lifetime.end}`"
    return f"from `{lifetime.start}`"
