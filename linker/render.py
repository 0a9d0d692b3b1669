"""The generated unit as CUDA text, from the artifacts only (:mod:`linker.artifacts`).

``render`` writes the order :mod:`linker.generate` documents: handle stubs, counters and
waits, call trampolines, tensor transfers, declarations, the params block and the dispatch
kernel. ``control`` renders the glue of the one-unit control build (``kernlink parity``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from linker.artifacts import (
    FORMAT,
    HALF_STRUCT,
    Dispatch,
    Generated,
    GroupRegs,
    ParamField,
    ParamsLayout,
    RoleEntry,
    Trampoline,
    component_ctype,
)
from package.abi import sanitize

if TYPE_CHECKING:
    from linker.transfers import Transfer, UnusedExport

_RULE = "// " + "-" * 64


def render(unit: Generated, inputs: Sequence[str] = (), *, control: bool = False) -> str:
    """The generated translation unit, as text ending with a newline; ``inputs`` name the packages.

    ``control`` renders the glue of the one-unit control build (``kernlink parity``): it
    follows every component's source, each wrapped in :func:`unit_namespace`, so the role
    entries and init hooks are not declared again with ``const void*`` (a conflicting
    declaration of the components' own) but named from their namespaces, and the dispatch
    kernel casts each params region to the type the entry is defined with.
    """
    d, params, handles, trampolines = unit.dispatch, unit.params, unit.handles, unit.trampolines
    transfers, unused, counter_lines = unit.transfers, unit.unused_exports, unit.function_handles
    out = [
        f"// kernlink generated code ({FORMAT}): pipeline `{unit.pipeline}`, target {unit.target}, "
        f"kernel `{d.kernel}`.",
        "// `kernlink link` writes this file; link.map records why each constant below has its value.",
        "// Do not edit it: change the contracts or the components and link again.",
        "//",
        "// stages, in pipeline order:",
    ]
    names = list(inputs) + [""] * (len(unit.stages) - len(inputs))
    out += [
        f"//   {name} {version}" + (f" from {n}" if n else "")
        for (name, version), n in zip(unit.stages, names, strict=True)
    ]
    out += [
        "",
        _RULE,
        "// Handles: each returns its solved constant; LTO folds every call into an immediate.",
        f"// Shared-memory offsets count from the dynamic shared memory base (shared address {d.smem_base}).",
    ]
    if handles:
        out.append('extern "C" {')
        for stage in dict.fromkeys(h.stage for h in handles):
            out.append(f"// {stage}")
            for h in (h for h in handles if h.stage == stage):
                out.append(f"__device__ unsigned {h.symbol}() {{ return {h.value}u; }}  // {_comment(h.why)}")
        out.append('}  // extern "C"')
    else:
        out.append("// (no component reads a handle)")
    if counter_lines:
        out += ["", _RULE, *counter_lines]
    out += ["", _RULE, "// Call trampolines: each call site's symbol calls the export that serves it."]
    if not trampolines:
        out.append("// (no call sites)")
    out += _half_lines(trampolines)
    for t in trampolines:
        out += _trampoline_lines(t)
    if transfers or unused:
        out += ["", _RULE, *_transfer_lines(transfers, unused)]
    out += ["", _RULE, "// Role entries and ring init hooks, defined by the components."]
    declared: dict[str, tuple[str, str]] = {}
    for init in d.inits:
        declared.setdefault(init.symbol, (init.stage, f"{init.stage}: init hook of ring `{init.ring}`"))
    for role in d.roles:
        declared.setdefault(role.entry, (role.stage, f"{role.stage}: entry of role `{role.role}`"))
    if control:
        out += [
            "// (one-unit control build: as each component defines them, in its namespace above)",
            "template <typename F> struct kl_entry_params;",
            "template <typename P, typename S> struct kl_entry_params<void(P, S)> { typedef P type; };",
        ]
        out += [f"using {unit_namespace(stage)}::{sym};  // {why}" for sym, (stage, why) in declared.items()]
    else:
        out.append('extern "C" {')
        out += [
            f"__device__ void {sym}(const void* params, unsigned char* smem);  // {why}"
            for sym, (_, why) in declared.items()
        ]
        out.append('}  // extern "C"')
    out += ["", _RULE, *_params_lines(params), "", _RULE, *_kernel_lines(d, params, control)]
    return "\n".join(out) + "\n"


def _transfer_lines(transfers: Sequence[Transfer], unused: Sequence[UnusedExport]) -> list[str]:
    from linker.transfers import elem_ctype

    out = [
        "// Tensor transfers: each connection's route, lowered with its link-time constants. The export",
        "// function is the producing stage's export handle, the import function the consuming stage's import",
        "// handle; every move is a bit copy (nothing is converted).",
    ]
    for t in transfers:
        where = "the export's claim" if t.shared == "buffer" else "scratch"
        scratch = (
            f"{where} `{t.scratch_claim}` at shared address {t.scratch_addr} (dynamic base + "
            f"{t.scratch_offset}), {t.scratch_bytes} B"
            if t.scratch_claim is not None
            else "no scratch"
        )
        barriers = (
            f"named barrier(s) {', '.join(map(str, t.barrier_ids))} of {t.barrier_threads} threads"
            if t.barrier_ids
            else "no named barrier"
        )
        out += ["", f"// {t.connection}: {t.title} ({t.rung}); {scratch}; {barriers}", t.source.rstrip("\n")]
    fans: dict[str, list[Transfer]] = {}
    for t in transfers:
        if t.fanned_out:
            fans.setdefault(t.export_symbol, []).append(t)
    for symbol, routes in fans.items():
        ordered = sorted(routes, key=lambda t: t.order)
        first = ordered[0]
        ctype = elem_ctype(first.elem)
        out += [
            "",
            f"// {first.export_stage}: export `{first.export}` feeds {len(ordered)} routes; its export handle "
            "runs them in import order",
            f'extern "C" __device__ void {symbol}(const {ctype}* held) {{',
            *(f"    {t.route_symbol}(held);  // route {t.order}: {t.connection}" for t in ordered),
            "}",
        ]
    for u in unused:
        out += [
            "",
            f"// {u.stage}: export `{u.export}` is imported by no stage; its export handle does nothing",
            f'extern "C" __device__ void {u.symbol}(const {u.ctype}* held) {{ (void)held; }}',
        ]
    return out


def _comment(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")


def _params_lines(params: ParamsLayout) -> list[str]:
    if not params.regions:
        return ["// The params block: no stage declares `params`; the kernel takes no parameter."]
    out = [
        "// The params block: each stage's params region at its offset. The launch helper writes the fields",
        "// marked `fact` from their owners' values; the caller gives the others.",
        f"struct __align__({params.align}) KlParams {{",
    ]
    cursor = 0
    for i, region in enumerate(params.regions):
        if region.offset > cursor:
            out.append(f"    unsigned char kl_pad{i}[{region.offset - cursor}];")
        out.append(
            f"    unsigned char {region.member}[{region.size}];  // @ {region.offset}: {region.stage} "
            f"`{region.block}` (align {region.align})"
        )
        for f in (f for f in params.fields if f.stage == region.stage and f.block == region.block):
            out.append(f"    //   @ {f.offset} {f.name}: {f.type}{_field_source(f)}")
        cursor = region.offset + region.size
    if params.size > cursor:
        out.append(f"    unsigned char kl_pad_end[{params.size - cursor}];")
    out.append("};")
    out.append(
        f"static_assert(sizeof(KlParams) == {params.size} && alignof(KlParams) == {params.align}, "
        '"params block layout");'
    )
    return out


def _field_source(f: ParamField) -> str:
    if f.source == "fact":
        return f" = fact `{f.fact}` = {f.value} (owned by {f.owner})"
    if f.fact is not None:
        return f" = fact `{f.fact}`, given by the caller" + (f" (owned by {f.owner})" if f.owner else "")
    return " (caller)"


def _branches(ranges: Sequence[tuple[int, int]], start: int = 0) -> list[str]:
    """``if``/``else if`` conditions selecting each warp range ``[lo, hi)`` (ranges sorted, disjoint)."""
    out = []
    previous = start
    for i, (lo, hi) in enumerate(ranges):
        cond = f"warp < {hi}u" if lo == previous else f"warp >= {lo}u && warp < {hi}u"
        out.append(("if" if i == 0 else "} else if") + f" ({cond}) {{")
        previous = hi
    return out


def unit_namespace(stage: str) -> str:
    """The namespace a stage's source is wrapped in inside the one-unit control build (``kernlink parity``)."""
    return f"kl_unit_{sanitize(stage)}"


def _kernel_lines(d: Dispatch, params: ParamsLayout, control: bool = False) -> list[str]:
    bounds = f"{d.threads}, {d.min_blocks}" if d.min_blocks is not None else f"{d.threads}"
    regs = f"entry {d.entry_regs} registers per thread" if d.setmaxnreg else "no setmaxnreg (no role declares `regs`)"
    signature = "const __grid_constant__ KlParams params" if params.regions else ""
    out = [
        f"// The dispatch kernel: {d.threads} threads = {d.block_warps} warps; {d.dynamic_smem} B of dynamic "
        f"shared memory; {regs}.",
        *(
            [
                f"// clusters of {d.cluster[0]}x{d.cluster[1]}x{d.cluster[2]} CTAs, fixed at compile time: "
                "the grid must be a multiple of the cluster"
            ]
            if d.clustered
            else []
        ),
        f'extern "C" __global__ void __launch_bounds__({bounds}){_cluster_dims(d)} {d.kernel}({signature}) {{',
        "    extern __shared__ __align__(1024) unsigned char kl_smem[];",
        "    const unsigned warp = threadIdx.x / 32u;",
    ]

    def params_of(member: str | None, entry: str) -> str:
        value = f"params.{member}" if member is not None else "kl_smem"
        return f"(kl_entry_params<decltype({entry})>::type){value}" if control else value

    members = {r.stage: r.member for r in params.regions if params.region_of(r.stage) is r}
    if d.tmem_columns:
        out += _tmem_alloc_lines(d)
    if d.inits:
        out.append("    // 1. ring inits: the first thread of each `init by` role, before any role starts")
        for init in d.inits:
            out += [
                f"    if (threadIdx.x == {init.thread}u) {{",
                f"        {init.symbol}({params_of(members.get(init.stage), init.symbol)}, kl_smem);"
                f"  // ring `{init.ring}`, init by role `{init.role}`",
                "    }",
            ]
        if d.clustered:
            out += [
                "    // every barrier of every CTA in the cluster is initialised before any role starts",
                '    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");',
                '    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");',
            ]
        else:
            out.append("    __syncthreads();  // every barrier is initialised before any role starts")
    if d.groups and _nested(d):
        return [*out, *_nested_lines(d, params_of, 1 + bool(d.inits)), *_tmem_free_lines(d), *_cluster_exit(d), "}"]
    if d.groups:
        out.append(
            f"    // {1 + bool(d.inits)}. register groups: setmaxnreg per warpgroup (the kernel starts with "
            f"{d.entry_regs})"
        )
        for line, grp in zip(
            _branches([(g.first_warp, g.first_warp + g.warps) for g in d.groups]), d.groups, strict=True
        ):
            out.append(f"    {line}")
            what = f"groups {grp.groups[0]}..{grp.groups[-1]}" if len(grp.groups) > 1 else f"group {grp.groups[0]}"
            who = ", ".join(grp.roles) or "idle warps"
            if grp.op is None:
                out.append(
                    f"        // {what}, warps {grp.first_warp}..{grp.first_warp + grp.warps - 1} ({who}): "
                    f"keeps {grp.budget}"
                )
            else:
                out.append(
                    f'        asm volatile("setmaxnreg.{grp.op}.sync.aligned.u32 {grp.budget};");'
                    f"  // {what}, warps {grp.first_warp}..{grp.first_warp + grp.warps - 1}: {who}"
                )
        out.append("    }")
    step = 1 + bool(d.inits) + bool(d.groups)
    out.append(f"    // {step}. roles: each warp range calls its role's entry")
    if d.roles:
        for line, role in zip(
            _branches([(r.first_warp, r.first_warp + r.warps) for r in d.roles]), d.roles, strict=True
        ):
            out.append(f"    {line}")
            passed = params_of(role.params_member, role.entry)
            out.append(
                f"        {role.entry}({passed}, kl_smem);  // {role.stage} role "
                f"`{role.role}`, warps {role.first_warp}..{role.first_warp + role.warps - 1}"
            )
        out.append("    }")
    if d.idle_warps:
        out.append(f"    // idle warps {', '.join(str(w) for w in d.idle_warps)} return at once")
    out += _tmem_free_lines(d)
    out += _cluster_exit(d)
    out.append("}")
    return out


def _group_of(d: Dispatch, role: RoleEntry) -> GroupRegs | None:
    return next(
        (
            g
            for g in d.groups
            if g.first_warp <= role.first_warp and role.first_warp + role.warps <= g.first_warp + g.warps
        ),
        None,
    )


def _nested(d: Dispatch) -> bool:
    """True when every role lies inside one register group: each group's branch then holds its roles."""
    return all(_group_of(d, r) is not None for r in d.roles)


def _setmaxnreg_line(grp: GroupRegs, indent: str) -> str:
    what = f"groups {grp.groups[0]}..{grp.groups[-1]}" if len(grp.groups) > 1 else f"group {grp.groups[0]}"
    who = ", ".join(grp.roles) or "idle warps"
    span = f"warps {grp.first_warp}..{grp.first_warp + grp.warps - 1}"
    if grp.op is None:
        return f"{indent}// {what}, {span} ({who}): keeps {grp.budget}"
    return f'{indent}asm volatile("setmaxnreg.{grp.op}.sync.aligned.u32 {grp.budget};");  // {what}, {span}: {who}'


def _nested_lines(d: Dispatch, params_of: Callable[[str | None, str], str], step: int) -> list[str]:
    """Register groups and roles in one if/else chain: ptxas compiles each branch to its group's budget.

    ptxas allocates registers for the code after a ``setmaxnreg`` to that budget only when
    the instruction and the code are in the same branch (each warpgroup's role
    one branch of a single if/else); with a separate chain the whole kernel is compiled to
    the entry count, and a role needing more (a wgmma accumulator) does not compile.
    """
    out = [
        f"    // {step}. register groups and roles: each warpgroup range runs setmaxnreg (the kernel starts "
        f"with {d.entry_regs}), then calls its roles' entries"
    ]
    for line, grp in zip(_branches([(g.first_warp, g.first_warp + g.warps) for g in d.groups]), d.groups, strict=True):
        out.append(f"    {line}")
        out.append(_setmaxnreg_line(grp, "        "))
        inner = [r for r in d.roles if _group_of(d, r) is grp]
        if len(inner) == 1 and (inner[0].first_warp, inner[0].warps) == (grp.first_warp, grp.warps):
            role = inner[0]
            out.append(
                f"        {role.entry}({params_of(role.params_member, role.entry)}, kl_smem);  "
                f"// {role.stage} role `{role.role}`, "
                f"warps {role.first_warp}..{role.first_warp + role.warps - 1}"
            )
            continue
        ranges = [(r.first_warp, r.first_warp + r.warps) for r in inner]
        for branch, role in zip(_branches(ranges, grp.first_warp), inner, strict=True):
            out.append(f"        {branch}")
            out.append(
                f"            {role.entry}({params_of(role.params_member, role.entry)}, kl_smem);  "
                f"// {role.stage} "
                f"role `{role.role}`, warps {role.first_warp}..{role.first_warp + role.warps - 1}"
            )
        if inner:
            out.append("        }")
    out.append("    }")
    if d.idle_warps:
        out.append(f"    // idle warps {', '.join(str(w) for w in d.idle_warps)} return at once")
    return out


def _trampoline_ctypes(t: Trampoline) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if t.caller_ctypes and t.export_ctypes:
        return t.caller_ctypes, t.export_ctypes
    plain = tuple(component_ctype(p, None) for p in (*t.params, t.result))
    return plain, plain


def _half_lines(trampolines: Sequence[Trampoline]) -> list[str]:
    """The 16-bit float helpers, when some trampoline passes one."""
    used = {c for t in trampolines for side in _trampoline_ctypes(t) for c in side}
    differs = any(a != b for t in trampolines for a, b in zip(*_trampoline_ctypes(t), strict=True))
    out = []
    if HALF_STRUCT in used:
        out += [
            "// a 16-bit float passed as a 2-byte aggregate (isomorphic to __nv_bfloat16 and __half)",
            f"struct __align__(2) {HALF_STRUCT} {{ unsigned short bits; }};",
        ]
    if differs:
        out += [
            "// the caller and the export pass a 16-bit float differently: the trampoline copies its bits",
            "template <typename To, typename From>",
            "static __device__ __forceinline__ To kl_bit_cast(From v) {",
            '    static_assert(sizeof(To) == sizeof(From), "a bit copy keeps the size");',
            "    union { From from; To to; } u;",
            "    u.from = v;",
            "    return u.to;",
            "}",
        ]
    return out


def _trampoline_lines(t: Trampoline) -> list[str]:
    caller, export = _trampoline_ctypes(t)

    def cast(to: str, frm: str, value: str) -> str:
        return value if to == frm else f"kl_bit_cast<{to}>({value})"

    args = ", ".join(f"{c} a{i}" for i, c in enumerate(caller[:-1]))
    passed = ", ".join(cast(e, c, f"a{i}") for i, (c, e) in enumerate(zip(caller[:-1], export[:-1], strict=True)))
    call = f"{t.export_symbol}({passed})"
    body = f"{call};" if t.result == "void" else f"return {cast(caller[-1], export[-1], call)};"
    return [
        f'extern "C" __device__ {export[-1]} {t.export_symbol}({", ".join(export[:-1])});'
        f"  // {t.export_stage}: export `{t.call}` {t.signature}",
        f'extern "C" __device__ {caller[-1]} {t.symbol}({args}) {{ {body} }}  // called by {"; ".join(t.callers)}',
    ]


def _cluster_dims(d: Dispatch) -> str:
    return f" __cluster_dims__({d.cluster[0]}, {d.cluster[1]}, {d.cluster[2]})" if d.clustered else ""


def _cluster_exit(d: Dispatch) -> list[str]:
    """A clustered kernel's last step: no CTA leaves while a peer may still reach its shared memory."""
    if not d.clustered:
        return []
    return [
        "    // every role of every CTA in the cluster has returned: no peer still reaches this CTA's shared",
        "    // memory when it exits",
        '    asm volatile("barrier.cluster.arrive.release;" ::: "memory");',
        '    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");',
    ]


def _tmem_alloc_lines(d: Dispatch) -> list[str]:
    """Warp 0 allocates the tensor memory every role shares and gives up the allocation permit.

    Every ``P_C_tmem`` handle is a column of this allocation counted from column 0, so an
    allocation that does not start at lane 0, column 0 stops the kernel (``trap``) rather
    than let roles use columns they do not own.
    """
    slot = f"kl_smem + {d.tmem_slot}u"
    return [
        f"    // 0. tensor memory: warp 0 allocates {d.tmem_columns} columns before any role starts (tcgen05.alloc",
        "    //    writes the address to shared memory) and relinquishes the allocation permit",
        "    if (warp == 0u) {",
        '        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::'
        f'"r"(static_cast<unsigned>(__cvta_generic_to_shared({slot}))), "r"({d.tmem_columns}u) : "memory");',
        '        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");',
        "    }",
        '    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");',
        "    __syncthreads();",
        '    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");',
        f"    if (*reinterpret_cast<volatile unsigned*>({slot}) != 0u) {{",
        '        asm volatile("trap;");  // handles count columns from 0: another allocation start is unusable',
        "    }",
    ]


def _tmem_free_lines(d: Dispatch) -> list[str]:
    """After every role has returned, warp 0 frees the allocation."""
    if not d.tmem_columns:
        return []
    return [
        "    // every role has returned: warp 0 frees the tensor memory",
        '    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");',
        "    __syncthreads();",
        '    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");',
        "    if (warp == 0u) {",
        f'        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, {d.tmem_columns};" :: "r"(0u) : '
        '"memory");',
        "    }",
    ]
