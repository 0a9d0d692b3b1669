"""kernlink's PTX reader: functions, instructions, shared declarations, and module-scope symbols.

Not a full PTX parser: it reads what NVRTC/nvcc/nvJitLink emit for one module — module
directives, ``.shared`` declarations (module or function scope), function headers with
their performance directives (``.maxntid``, ``.reqntid``, ``.reqnctapercluster``,
``.explicitcluster``), and each instruction with its guard, opcode, operands, PTX line
and, where the PTX was compiled with ``-lineinfo``, the CUDA source line (``.loc``)
(:func:`parse`, for the conformance checks); and every symbol declared at module scope
with its linkage and PTX prototype (:func:`declarations`, for what a package defines and
needs: toolchain/symbols.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from package.captured import Prototype, SymbolKind

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)(?:.*inlined_at\s+(\d+)\s+(\d+))?")
_LOCAL = re.compile(r"^\.local\s+(?:\.align\s+\d+\s+)?\.(?:b|u|s|f)\d+\s+([A-Za-z_$][\w$]*)")
_SHARED = re.compile(
    r"^\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.shared\s+(?:\.align\s+(\d+)\s+)?"
    r"\.(?:b|u|s|f)(\d+)\s+([A-Za-z_$][\w$]*)\s*((?:\[\d*\])*)"
)
_DIRECTIVE = re.compile(r"\.(maxntid|reqntid|reqnctapercluster|explicitcluster|maxnreg|minnctapersm)\b\s*([\d,\s]*)")
_LABEL = re.compile(r"^([$\w]+):")


@dataclass(frozen=True)
class Instr:
    """One instruction: ``@guard opcode a, b, …`` at PTX line ``line`` (source line ``src`` if known).

    ``src`` is where the author wrote the call that put the instruction there (an inlined
    helper's call site); ``origin`` the line of the instruction itself, in the helper.
    """

    opcode: str
    operands: tuple[str, ...]
    line: int
    guard: str | None = None
    src: tuple[str, int] | None = None
    origin: tuple[str, int] | None = None

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    def has(self, part: str) -> bool:
        """Whether the opcode has the part ``part``, alone or qualified (``shared`` in ``st.shared::cta.u32``)."""
        return any(p == part or p.startswith(part + "::") for p in self.opcode.split("."))

    @property
    def text(self) -> str:
        guard = f"@{self.guard} " if self.guard else ""
        return f"{guard}{self.opcode} {', '.join(self.operands)}".strip()


@dataclass(frozen=True)
class SharedDecl:
    """A ``.shared`` variable: name, bytes (0 for ``extern`` dynamic arrays), where declared."""

    name: str
    size: int
    line: int
    dynamic: bool
    function: str | None


@dataclass(frozen=True)
class Function:
    name: str
    kind: str  # ".entry" | ".func"
    params: tuple[str, ...]
    directives: tuple[tuple[str, tuple[int, ...], int], ...]  # (name, values, line)
    body: tuple[Instr, ...]
    line: int
    labels: tuple[tuple[str, int], ...] = ()  # (label, index in ``body`` of the instruction it names)
    local_names: frozenset[str] = frozenset()  # its ``.local`` variables (nvcc's stack: ``__local_depot<N>``)
    returns: tuple[str, ...] = ()  # a ``.func``'s return parameters (``func_retval0``), not among ``params``

    @property
    def entry_like(self) -> bool:
        """A ``(params, smem) -> void`` device function: how a linked kernel calls a role's entry."""
        return self.kind == ".func" and len(self.params) == 2 and not self.returns


@dataclass(frozen=True)
class Module:
    functions: tuple[Function, ...]
    shared: tuple[SharedDecl, ...]
    lines: int

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)


def _strip_comment(line: str) -> str:
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def split_operands(text: str) -> tuple[str, ...]:
    """Comma-separated operands, commas inside ``[]``, ``{}`` or ``()`` kept."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last:
        out.append(last)
    return tuple(out)


def _shared_decl(text: str, line: int, function: str | None) -> SharedDecl | None:
    m = _SHARED.match(text)
    if m is None:
        return None
    bits, name, dims = int(m.group(2)), m.group(3), m.group(4)
    extern = ".extern" in text.split(".shared", 1)[0]
    counts = [int(d) for d in re.findall(r"\[(\d*)\]", dims) if d]
    size = bits // 8
    for c in counts:
        size *= c
    dynamic = extern or "[]" in dims
    return SharedDecl(name, 0 if dynamic else size, line, dynamic, function)


def parse(ptx: str) -> Module:
    """Read a PTX module (never raises: what it does not recognise it skips)."""
    files: dict[int, str] = {}
    functions: list[Function] = []
    shared: list[SharedDecl] = []
    raw = ptx.split("\n")
    for line in raw:
        fm = _FILE.match(line)
        if fm:
            files[int(fm.group(1))] = fm.group(2).rsplit("/", 1)[-1]
    i = 0
    while i < len(raw):
        text = _strip_comment(raw[i])
        fm = _FILE.match(text)
        if fm:
            files[int(fm.group(1))] = fm.group(2).rsplit("/", 1)[-1]
            i += 1
            continue
        decl = _shared_decl(text, i + 1, None)
        if decl is not None:
            shared.append(decl)
            i += 1
            continue
        hm = _DECL_FUNC.match(text.strip())  # a function's header line (its body follows)
        if hm and ".extern" not in text.split(hm.group("kind"), 1)[0]:
            i = _function(raw, i, hm.group("kind"), hm.group("name"), files, functions, shared)
            continue
        i += 1
    return Module(tuple(functions), tuple(shared), len(raw))


def _function(
    raw: list[str],
    start: int,
    kind: str,
    name: str,
    files: dict[int, str],
    functions: list[Function],
    shared: list[SharedDecl],
) -> int:
    """Parse one function from its header line; returns the index after its closing brace."""
    header: list[str] = []
    directives: list[tuple[str, tuple[int, ...], int]] = []
    i = start
    while i < len(raw) and "{" not in _strip_comment(raw[i]):
        text = _strip_comment(raw[i])
        if text.strip().endswith(";") and i > start and "(" not in "".join(header) + text:
            return i + 1  # a declaration, not a definition
        header.append(text)
        for dm in _DIRECTIVE.finditer(text):
            values = tuple(int(v) for v in re.findall(r"\d+", dm.group(2)))
            directives.append((dm.group(1), values, i + 1))
        if text.rstrip().endswith(";"):
            return i + 1
        i += 1
    # the parameters after the function's name (a `.func (.param .b32 func_retval0) f(…)` returns its value in
    # the parameter list before it, which is no argument)
    text = " ".join(header)
    named = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text)
    params = tuple(_PARAM.findall(text[named.end() if named else 0 :]))
    returns = tuple(_PARAM.findall(text[: named.start()])) if named else ()
    body: list[Instr] = []
    labels: list[tuple[str, int]] = []
    local_names: set[str] = set()
    depth = 0
    src: tuple[str, int] | None = None
    origin: tuple[str, int] | None = None
    pending = ""
    pending_line = 0
    while i < len(raw):
        text = _strip_comment(raw[i])
        stripped = text.strip()
        lm = _LOC.match(text)
        if lm:
            # An inlined helper's line is reported at its call site (what the author wrote in the role).
            index, number = (lm.group(3), lm.group(4)) if lm.group(3) else (lm.group(1), lm.group(2))
            src = (files.get(int(index), f"#{index}"), int(number))
            origin = (files.get(int(lm.group(1)), f"#{lm.group(1)}"), int(lm.group(2)))
            i += 1
            continue
        opened, closed = stripped.count("{"), stripped.count("}")
        core = stripped.replace("{", " ").replace("}", " ").strip()
        if core.startswith(".") and (_SHARED.match(core) or core.startswith((".reg", ".param", ".local", ".pragma"))):
            decl = _shared_decl(core, i + 1, name)
            if decl is not None:
                shared.append(decl)
            local = _LOCAL.match(core)
            if local:
                local_names.add(local.group(1))
            core = ""
        label = _LABEL.match(core)
        if label:
            labels.append((label.group(1), len(body)))
            core = core[label.end() :].strip()
        if core:
            if not pending:
                pending_line = i + 1
            pending += " " + core
            while ";" in pending:
                stmt, pending = pending.split(";", 1)
                ins = _instruction(stmt.strip(), pending_line, src, origin)
                if ins is not None:
                    body.append(ins)
                pending = pending.strip()
                pending_line = i + 1
        depth += opened - closed
        i += 1
        if depth <= 0 and closed:
            break
    functions.append(
        Function(
            name,
            kind,
            params,
            tuple(directives),
            tuple(body),
            start + 1,
            tuple(labels),
            frozenset(local_names),
            returns,
        )
    )
    return i


def _instruction(
    stmt: str, line: int, src: tuple[str, int] | None, origin: tuple[str, int] | None = None
) -> Instr | None:
    if not stmt or stmt.startswith("."):
        return None
    guard = None
    if stmt.startswith("@"):
        guard, _, stmt = stmt[1:].partition(" ")
        stmt = stmt.strip()
    opcode, _, rest = stmt.partition(" ")
    if not opcode or not re.match(r"[a-z]", opcode):
        return None
    return Instr(opcode, split_operands(rest.strip()), line, guard, src, origin if origin != src else None)


# ---- module-scope declarations

_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.\w+\s+([\w$]+)")
_DECL_FUNC = re.compile(
    r"^(?P<linkage>\.visible|\.extern|\.weak|\.common)?\s*(?P<kind>\.entry|\.func)\s*"
    r"(?:\((?P<ret>[^)]*)\))?\s*(?P<name>[A-Za-z_$%][\w$]*)\s*(?:\((?P<params>[^)]*)\))?"
)
_DECL_VAR = re.compile(
    r"^(?P<linkage>\.visible|\.extern|\.weak|\.common)\s+(?P<space>\.global|\.const|\.shared)\b"
    r"(?P<rest>[^=]*?)(?P<name>[A-Za-z_$%][\w$]*)\s*(?:\[[^\]]*\]\s*)*(?:=.*)?$"
)
_SLOT_TYPE = re.compile(r"\.(?P<type>[bsuf](?:8|16|32|64)|pred)\b")
_SLOT_ARRAY = re.compile(r"\[\d+\]\s*$")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_MODULE_DIRECTIVE = re.compile(r"^\s*\.(?:version|target|address_size|file)\b[^\n]*$", re.M)  # no ';' ends these


@dataclass(frozen=True)
class Declaration:
    """A symbol declared at module scope with a linkage: ``.visible``, ``.extern``, ``.weak`` or
    ``.common``, its name, and its PTX prototype (a ``.shared`` variable is none of these)."""

    linkage: str
    name: str
    prototype: Prototype


def declarations(ptx: str) -> tuple[Declaration, ...]:
    """Every module-scope declaration with a linkage, in module order (function bodies and
    initialisers cut out; a declaration may span lines)."""
    found = []
    for statement in _module_statements(ptx):
        declared = _declaration(statement)
        if declared is not None:
            found.append(declared)
    return tuple(found)


def _module_statements(ptx: str) -> list[str]:
    """Module-scope statements: function bodies and initialisers are cut out, ';' splits."""
    text = _MODULE_DIRECTIVE.sub(" ", _COMMENTS.sub(" ", ptx))
    outside: list[str] = []
    depth = 0
    for char in text:
        if char == "{":
            if depth == 0:
                outside.append(";")
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            outside.append(char)
    return [" ".join(s.split()) for s in "".join(outside).split(";") if s.strip()]


def _declaration(statement: str) -> Declaration | None:
    func = _DECL_FUNC.match(statement)
    if func and func["linkage"]:
        kind: SymbolKind = "entry" if func["kind"] == ".entry" else "func"
        return Declaration(func["linkage"], func["name"], Prototype(kind, _slots(func["params"]), _slots(func["ret"])))
    var = _DECL_VAR.match(statement)
    if var and var["space"] != ".shared":
        return Declaration(var["linkage"], var["name"], Prototype("var"))
    return None


def _slots(text: str | None) -> tuple[str, ...]:
    if not text or not text.strip():
        return ()
    slots = []
    for part in text.split(","):
        found = _SLOT_TYPE.search(part)
        array = _SLOT_ARRAY.search(part)
        slots.append((found["type"] if found else part.strip()) + (array.group(0).strip() if array else ""))
    return tuple(slots)
