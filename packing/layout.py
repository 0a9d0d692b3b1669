"""Capture the layout of a component's params structs as its compiler computes it.

A contract's ``params NAME size N align A { field: type @ off }`` block names a
struct the component declares at global scope (``struct NAME { … };``). The
packer appends a *probe* to the component's source: a device function (the
*keeper*) that stores ``sizeof``, ``alignof``, the offset and the size of every
field the contract names into an array, one word after another, and reads the
values back from those stores in the PTX. So the captured layout is what the
compiler computed, not what the contract claims; comparing the two is L-PARAMS.

The probe is part of the source that is compiled to LTO IR (one compile gives the
LTO IR and, through nvJitLink, the PTX), so it must leave no trace in a linked
kernel: it declares no variable (nvJitLink keeps every device variable, used or
not) — the constants are enumerators and the array is the keeper's parameter — and
the keeper is an external device function, which the separate-compilation PTX
keeps and the device link, where nothing calls it, drops.

The probe tolerates what it is meant to find: a struct that is not declared, or a
field it lacks, becomes an absent layout or an absent field (detected with SFINAE,
so the probe still compiles), not a compiler error.

Array words: ``MAGIC, blocks, then per block: size, align, then per field:
offset, size``; a missing struct has size 0, a missing field offset ``MISSING``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contract_lang import ast as A
from diagnostics import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from package.captured import CapturedParams

PROBE_SYMBOL = "kl_probe_layouts"
#: The probe's keeper (``kl_probe_keep_<stage>``): a device function that returns the array, so that
#: the array (internal, ``static``) survives into the PTX of a separate-compilation build and nowhere
#: else — at the device link nothing calls it, and whole-program optimisation drops it and the
#: array with it. Its name is the stage's: nvJitLink rejects two definitions, even weak ones.
PROBE_KEEPER = "kl_probe_keep"
PROBE_FILE = "<kernlink params probe>"
MAGIC = 0x4B4C5031  # "KLP1"
MISSING = 0xFFFFFFFF

_KEEPER = re.compile(rf"\.func\s+{PROBE_KEEPER}\w*\s*\((?P<params>[^)]*)\)\s*\{{(?P<body>[^}}]*)\}}")
_MOV = re.compile(r"\bmov\.[bu]32\s+(?P<reg>%r\d+)\s*,\s*(?P<value>-?(?:0[xX][0-9a-fA-F]+|\d+))[uU]?\s*;")
_STORE = re.compile(
    r"\bst(?:\.volatile)?(?:\.global)?\.[bu]32\s+\[\s*%rd\d+\s*(?:\+\s*(?P<offset>\d+))?\s*\]\s*,\s*"
    r"(?P<value>%r\d+|-?(?:0[xX][0-9a-fA-F]+|\d+))[uU]?\s*;"
)
_PRELUDE = f"""
#line 1 "{PROBE_FILE}"
#if defined(__CUDACC_RTC__)
#define KL_PROBE_OFFSET(T, m) ((unsigned)__INTADDR__(&(((T*)0)->m)))
#else
#define KL_PROBE_OFFSET(T, m) ((unsigned)__builtin_offsetof(T, m))
#endif
template <class...> struct kl_probe_void {{ typedef void type; }};
template <class T, class = void> struct kl_probe_struct {{ enum : unsigned {{ size = 0, align = 0 }}; }};
template <class T> struct kl_probe_struct<T, typename kl_probe_void<decltype(sizeof(T))>::type> {{
    enum : unsigned {{ size = sizeof(T), align = alignof(T) }};
}};
"""


def params_blocks(stage: A.Stage) -> tuple[A.Params, ...]:
    return tuple(it for it in stage.items if isinstance(it, A.Params))


def probe_keeper(stage: str) -> str:
    """The name of the probe's keeper function in the package of ``stage``."""
    return f"{PROBE_KEEPER}_{re.sub(r'[^A-Za-z0-9_]', '_', stage)}"


def probe_source(blocks: Sequence[A.Params], stage: str = "") -> str:
    """The probe to append to the source of ``stage``'s component, for these params blocks."""
    lines = [_PRELUDE]
    words = [f"0x{MAGIC:08X}u", str(len(blocks))]
    for b, block in enumerate(blocks):
        lines.append(f"struct {block.name};")
        words += [f"kl_probe_struct<{block.name}>::size", f"kl_probe_struct<{block.name}>::align"]
        for f, fld in enumerate(block.fields):
            probe = f"kl_probe_field_{b}_{f}"
            lines.append(
                f"template <class T, class = void> struct {probe} "
                f"{{ enum : unsigned {{ offset = 0x{MISSING:08X}u, size = 0 }}; }};\n"
                f"template <class T> struct {probe}<T, typename kl_probe_void<decltype(((T*)0)->{fld.name})>::type> "
                f"{{ enum : unsigned {{ offset = KL_PROBE_OFFSET(T, {fld.name}), "
                f"size = sizeof(((T*)0)->{fld.name}) }}; }};"
            )
            words += [f"{probe}<{block.name}>::offset", f"{probe}<{block.name}>::size"]
    stores = "".join(f"\n    {PROBE_SYMBOL}[{i}] = {w};" for i, w in enumerate(words))
    lines.append(f'extern "C" __device__ void {probe_keeper(stage)}(volatile unsigned* {PROBE_SYMBOL}) {{{stores}\n}}')
    return "\n".join(lines) + "\n"


def read_probe(ptx: str, blocks: Sequence[A.Params]) -> tuple[CapturedParams, ...]:
    """The layouts the probe's initialiser holds; absent structs are left out, absent fields too."""
    words = _probe_words(ptx)
    expected = 2 + sum(2 + 2 * len(b.fields) for b in blocks)
    if len(words) != expected or words[0] != MAGIC or words[1] != len(blocks):
        raise _probe_error(f"the probe array has {len(words)} words, {expected} expected")
    layouts = []
    at = 2
    for block in blocks:
        size, align = words[at], words[at + 1]
        at += 2
        fields = []
        for fld in block.fields:
            offset, nbytes = words[at], words[at + 1]
            at += 2
            if offset != MISSING:
                fields.append((fld.name, offset, nbytes))
        if size:
            layouts.append(CapturedParams(block.name, size, align, tuple(fields)))
    return tuple(layouts)


def _probe_words(ptx: str) -> list[int]:
    """The words the keeper function stores, by offset (each a ``st.volatile.u32`` of a constant)."""
    match = _KEEPER.search(ptx)
    if match is None:
        raise _probe_error(f"no `{PROBE_KEEPER}` function in the PTX")
    body = match["body"]
    registers = {m["reg"]: int(m["value"], 0) for m in _MOV.finditer(body)}
    stored: dict[int, int] = {}
    for m in _STORE.finditer(body):
        value = m["value"]
        if value.startswith("%") and value not in registers:
            raise _probe_error(f"the probe stores `{value}`, which holds no constant")
        stored[int(m["offset"] or 0)] = (registers[value] if value.startswith("%") else int(value, 0)) & MISSING
    if sorted(stored) != [4 * i for i in range(len(stored))]:
        raise _probe_error("the probe's stores are not one word after another")
    return [stored[k] for k in sorted(stored)]


def _probe_error(why: str) -> DiagnosticError:
    return DiagnosticError(
        [
            Diagnostic(
                Code.E_PACK,
                f"could not read the params layouts back from the compiler: {why}",
                helps=("report this with the component's source; the compiler's PTX format may have changed",),
            )
        ]
    )
