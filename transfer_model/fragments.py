"""Register fragments passed to exported callables (specs/language.md §10.1), checked call by call.

A callable states the fragment it takes (``import tensor acc into callable f { … demand … }``), a
caller the fragment its call passes (``export tensor acc into call f { … placement … }``). The
callable reads its argument as an array, register ``p`` of thread ``t`` (of its group) the caller's
register ``p`` of the same thread: the register-copy rung with the register index fixed to the
same one. So a pair is accepted only when element type and tile agree (L-DTYPE, L-TENSOR), both
maps are exact over the same group of threads (L-MAP), and no element the callable demands at
``(t, p)`` is held anywhere else by the caller (L-ROUTE, with the witness). A fragment one side
states and the other does not is L-TENSOR: the callable would read registers nobody vouched for.
A pair the solver cannot decide within its budget is E-SOLVER-UNKNOWN of L-ROUTE on both lines:
an error (never a pass), worded as undecided, not as a refutation.
"""

from __future__ import annotations

from checker.clauses import l_map, l_route, l_tensor
from checker.composition import Composition, Owned
from checker.resolve import serving_exports
from contract_lang import ast as A
from contract_lang.expr import Name
from diagnostics.model import Diagnostic, Label
from solver.diagnostic import unknown_diagnostic
from transfer_model import exprs as ex
from transfer_model.adapter import layout_map
from transfer_model.library import LibraryError
from transfer_model.maps import REGS, check_map, point_text
from transfer_model.primitives import Seam
from transfer_model.routes import check_maps, seam_labels
from transfer_model.smt import DEFAULT_RLIMIT
from transfer_model.tensors import RoleThreads, TensorExport, TensorImport, check_identity

Frag = Owned[A.Fragment]


def _tensor(message: str, help_: str, labels: tuple[Label, ...]) -> Diagnostic:
    return Diagnostic(l_tensor.CODE, message, labels=labels, helps=(help_,))


def check_fragments(comp: Composition) -> list[Diagnostic]:
    """Every fragment of the composition paired with its other side and proved register for register."""
    frags = list(comp.items(A.Fragment))
    out: list[Diagnostic] = []
    stray: set[tuple[str, str]] = set()  # (stage, fragment) of a fragment naming no callable of its stage
    for frag in frags:
        found = _declared(comp, frag)
        out += found
        if found:
            stray.add((frag.stage_name, frag.item.name))
    for call in comp.calls:
        passed = {f.item.name: f for f in frags if f.item.side == "export" and _of_call(f, call)}
        for exp in serving_exports(comp, call):
            taken = {
                f.item.name: f
                for f in frags
                if f.item.side == "import" and f.stage is exp.stage and f.item.callable == exp.item.name
            }
            out += _pair(call, exp, taken, passed, stray, comp)
    return out


def check_alone(comp: Composition, rlimit: int = DEFAULT_RLIMIT) -> list[Diagnostic]:
    """Each fragment no pair of this composition reaches, checked on its own side: a callable's stage
    checked alone (`kernlink check --stage`), or a caller whose callable is not in it, learns before
    composing what its own lines get wrong. It names a callable its stage exports (calls), states
    elem, tile and map, its map is a register map over whole warps and exact over its tile (L-MAP,
    as the pair's proof would find it), a callable's signature has a pointer for each fragment it
    takes, and a calling role is a whole number of the map's groups. A fragment a pair reaches is
    :func:`check_fragments`' (after placement): one mistake, one diagnostic."""
    frags = list(comp.items(A.Fragment))
    served = {id(e) for call in comp.calls for e in serving_exports(comp, call)}
    calls_served = {id(call) for call in comp.calls if serving_exports(comp, call)}
    out: list[Diagnostic] = []
    lone_imports: dict[tuple[int, str], list[Frag]] = {}
    for frag in frags:
        if frag.item.side == "import":
            exports = [e for e in comp.exports.get(frag.item.callable, ()) if e.stage is frag.stage]
            if any(id(e) in served for e in exports):
                continue
        else:
            calls = [c for c in comp.calls if _of_call(frag, c)]
            if any(id(c) in calls_served for c in calls):
                continue
        stray = _declared(comp, frag)
        if stray:
            out += stray
            continue
        own = _one_side(frag.item, rlimit)
        out += own
        if own:
            continue
        if frag.item.side == "import":
            lone_imports.setdefault((id(frag.stage), frag.item.callable), []).append(frag)
        else:
            for call in (c for c in comp.calls if _of_call(frag, c)):
                out += _role_groups(comp, call, frag.item)
    for taken in lone_imports.values():
        out += _pointers(comp, taken)
    return out


def check_stage(stage: A.Stage, source: str, rlimit: int = DEFAULT_RLIMIT) -> list[Diagnostic]:
    """:func:`check_alone` for one stage as `kernlink pack` reads it: before any composition."""
    from checker.resolve import resolve
    from package.loader import StageEntry, implicit_pipeline

    if not any(isinstance(i, A.Fragment) for i in stage.items):
        return []
    pipeline = implicit_pipeline([stage], stage.name, stage.span)
    return check_alone(resolve(pipeline, source, [StageEntry(stage, source, None)]), rlimit)


def _one_side(frag: A.Fragment, rlimit: int) -> list[Diagnostic]:
    """One side's own fragment: stated whole, a register map over whole warps, exact over its tile."""
    absent = _missing(frag)
    if absent or frag.map is None:
        return absent
    try:
        layout = layout_map(frag.map)
    except (LibraryError, ValueError) as err:
        return [l_map.unreadable(str(err).rstrip("."), frag.map.span)]
    word = "demand" if frag.side == "import" else "placement"
    if layout.kind != REGS:
        return [l_map.demand_not_registers(f"fragment `{frag.name}`", layout.kind, layout.span)]
    threads = layout.thread[1]
    if threads < 32 or threads % 32:
        return [l_map.fragment_threads(frag.name, frag.callable, word, threads, layout.span)]
    tile = tuple((d.name, d.extent) for d in frag.tile)
    return check_map(layout, tile, what=f"{word} of fragment `{frag.name}`", rlimit=rlimit)


def _pointers(comp: Composition, taken: list[Frag]) -> list[Diagnostic]:
    """A callable passed its fragments as pointers has at least as many `ptr` parameters as fragments."""
    first = taken[0]
    exports = [e for e in comp.exports.get(first.item.callable, ()) if e.stage is first.stage]
    out: list[Diagnostic] = []
    for exp in exports:
        pointers = sum(1 for p in exp.item.signature.params if p == "ptr")
        if pointers < len(taken):
            names = sorted(f.item.name for f in taken)
            out.append(l_tensor.fragment_pointers(exp.item.name, names, pointers, exp.span, first.span))
    return out


def _of_call(frag: Frag, call: Owned[A.Call]) -> bool:
    return frag.stage is call.stage and frag.item.callable == call.item.name


def _declared(comp: Composition, frag: Frag) -> list[Diagnostic]:
    """A fragment names a callable its stage exports (import side) or calls (export side)."""
    item = frag.item
    if item.side == "import":
        names = sorted({e.item.name for group in comp.exports.values() for e in group if e.stage is frag.stage})
        what = "exports"
    else:
        names = sorted({c.item.name for c in comp.calls if c.stage is frag.stage})
        what = "calls"
    if item.callable in names:
        return []
    fix = f"name a callable the stage {what}: " + (", ".join(f"`{n}`" for n in names) if names else "it has none")
    message = (
        f"fragment `{item.name}` is {item.side}ed into `{item.callable}`, which stage `{frag.stage_name}` never {what}"
    )
    return [_tensor(message, fix, (Label(item.span, "this fragment", True),))]


def _pair(
    call: Owned[A.Call],
    exp: Owned[A.ExportCallable],
    taken: dict[str, Frag],
    passed: dict[str, Frag],
    stray: set[tuple[str, str]],
    comp: Composition,
) -> list[Diagnostic]:
    """The fragments one call passes against those its callable takes. A side whose fragment of that
    name names another callable (a misspelt one) was reported already: one mistake, one diagnostic."""
    out: list[Diagnostic] = []
    name = call.item.name
    for missing in sorted(taken.keys() - passed.keys()):
        if (call.stage_name, missing) in stray:
            continue
        out.append(
            _tensor(
                f"callable `{name}` takes fragment `{missing}` in registers but the call from "
                f"`{call.stage_name}` does not state the fragment it passes",
                f"state it at the caller: `export tensor {missing} into call {name} {{ elem … tile … placement … }}`",
                (Label(call.span, "this call", True), Label(taken[missing].span, "the callable takes it here", False)),
            )
        )
    for extra in sorted(passed.keys() - taken.keys()):
        if (exp.stage_name, extra) in stray:
            continue
        out.append(
            _tensor(
                f"the call of `{name}` passes fragment `{extra}`, which the callable from `{exp.stage_name}` "
                "does not take",
                "pass only the fragments the callable's `import tensor … into callable` lines take",
                (Label(passed[extra].span, "passed here", True), Label(exp.span, "the callable", False)),
            )
        )
    for both in sorted(taken.keys() & passed.keys()):
        out += _role_groups(comp, call, taken[both].item) or prove(passed[both].item, taken[both].item)
    return out


def _role_groups(comp: Composition, call: Owned[A.Call], taken: A.Fragment) -> list[Diagnostic]:
    """A role that calls in groups of the demand's threads has a whole number of them."""
    info = comp.roles.get(call.item.caller) if call.item.caller_kind == "role" else None
    if info is None or not info.warps or taken.map is None:
        return []  # an unknown role is L-ROLE's, a missing map L-TENSOR's (prove)
    try:
        layout = layout_map(taken.map)
    except (LibraryError, ValueError):
        return []  # prove reports the unreadable map
    threads = layout.thread[1] if layout.kind == REGS else 0
    if not threads or (info.warps * 32) % threads == 0:
        return []
    spec, word = taken.map, "demanded" if taken.side == "import" else "placed"
    return [
        l_map.fragment_role(taken.name, taken.callable, info.name, info.warps * 32, threads, call.span, spec.span, word)
    ]


def _missing(frag: A.Fragment) -> list[Diagnostic]:
    """A fragment states its element type, tile and map: nothing of it is taken from the other side."""
    word = "demand" if frag.side == "import" else "placement"
    absent = [w for w, v in (("elem", frag.elem), ("tile", frag.tile), (word, frag.map)) if not v]
    return [
        _tensor(
            f"fragment `{frag.name}` of `{frag.callable}` states no `{w}`",
            f"state the fragment's `{w}`: both sides of a call state the whole fragment",
            (Label(frag.span, "this fragment", True),),
        )
        for w in absent
    ]


def prove(passed: A.Fragment, taken: A.Fragment, rlimit: int = DEFAULT_RLIMIT) -> list[Diagnostic]:
    """One pair: identity, both maps, then every demanded element in the same thread and register;
    ``rlimit`` bounds each solver query (the transfer model's budget, as for a seam's routes)."""
    absent = _missing(passed) + _missing(taken)
    if absent or passed.map is None or taken.map is None or passed.elem is None:
        return absent
    unreadable: list[Diagnostic] = []
    layouts = []
    for spec in (passed.map, taken.map):
        try:
            layouts.append(layout_map(spec))
        except (LibraryError, ValueError) as err:
            unreadable.append(l_map.unreadable(str(err).rstrip("."), spec.span))
    if unreadable:
        return unreadable
    placement, demand = layouts
    for frag, layout in ((passed, placement), (taken, demand)):
        if layout.kind != REGS:
            return [l_map.demand_not_registers(f"fragment `{frag.name}`", layout.kind, layout.span)]
    threads = demand.thread[1]
    if threads < 32 or threads % 32 or placement.thread[1] != threads:
        return [
            l_map.fragment_group(taken.name, taken.callable, placement.thread[1], threads, placement.span, demand.span)
        ]
    group = RoleThreads(0, threads)
    export = TensorExport(
        passed.name,
        f"call {passed.callable}",
        passed.elem,
        tuple((d.name, d.extent) for d in passed.tile),
        placement,
        group,
        span=passed.span,
    )
    imp = TensorImport(
        taken.name,
        passed.name,
        f"callable {taken.callable}",
        taken.elem or passed.elem,
        tuple((d.name, d.extent) for d in taken.tile),
        demand,
        group,
        span=taken.span,
    )
    found = check_identity(export, imp) or check_maps(export, imp, rlimit)
    if found:
        return list(found)
    return _same_registers(Seam(export, imp, rlimit), taken.callable)


def _same_registers(seam: Seam, callable_: str) -> list[Diagnostic]:
    """The element the callable demands at (thread t, register p) is the caller's (t, p), in every slot."""
    pp, po = seam.producer("p.")
    moved = ex.compare("!=", Name(pp[0][0]), seam.c_thread)
    other_reg = ex.compare("!=", seam.p_reg("p."), seam.c_reg)
    answer = seam.solve([*seam.c_params, *pp], [*seam.holds(po, seam.c_out), ex.disj([moved, other_reg])])
    export, imp = seam.export, seam.imp
    labels = seam_labels(export, imp)
    what = f"fragment `{imp.name}` passed to `{callable_}`"
    if answer.verdict.unknown:  # undecided, never refuted nor passed: E-SOLVER-UNKNOWN of L-ROUTE
        return [
            unknown_diagnostic(
                l_route.CODE.value,
                f"{what}: the solver could not decide whether every register arrives where the callable reads it",
                labels,
                more_notes=(f"solver: {answer.verdict.reason}",),
                helps=(
                    "state both maps in closed form with small extents, or the callable's `demand` as the caller's "
                    "`placement` itself (the same library map)",
                ),
            )
        ]
    if answer.verdict.unsat:
        return []
    values = dict(answer.witness)
    w = seam.witness(answer)
    element = point_text(w.element_names, w.element)
    holder = values[pp[0][0]]
    reg = ex.compile_function([n for n, _ in pp], [seam.p_reg("p.")])(*(values[n] for n, _ in pp))[0]
    return [
        Diagnostic(
            l_route.CODE,
            f"{what}: the callable reads element `{element}` from thread {w.thread}, register {w.register}, "
            f"but the caller holds it in thread {holder}, register {reg}",
            labels=labels,
            notes=("a callable reads its fragment register for register: no shuffle or staging moves it",),
            helps=("make the callable's `demand` the caller's `placement` (the same thread, the same register)",),
            data=(
                ("thread", str(w.thread)),
                ("register", str(w.register)),
                ("held_thread", str(holder)),
                ("held_register", str(reg)),
            ),
        )
    ]
