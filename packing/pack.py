"""`kernlink pack`: compile one component to LTO IR and package it with what the compiler saw.

Steps, for the contract's one stage (or the one ``--stage`` names):

1. compile the source, with a params probe appended (packing/layout.py), to LTO IR
   for the stage's ``target`` with NVRTC (and ``-lineinfo``), and have nvJitLink lower
   that LTO IR to PTX (one child process, toolchain/symbols.py): one front-end compile,
   and the PTX is the code of the LTO IR that is linked. With nvcc the same: the
   probed source to LTO IR (with ``-lineinfo``), which nvJitLink lowers to PTX;
2. read the defined and needed device symbols with their prototypes
   (toolchain/symbols.py) and the params layouts from that PTX;
2b. analyse that same PTX for conformance (checker/conformance): the facts go into
   the manifest (``conformance``), the PTX into the payload ``code.ptx``, and each
   disagreement with the contract comes back as an L-CONFORM warning (``--strict``:
   an error, and undecided sites too);
3. write the ``.kpkg`` atomically: the manifest of package/manifest.py (the contract
   in canonical form, the captured facts, target and toolkit), plus
   ``captured.prototypes``, ``compile`` (compiler and options) and ``conformance``,
   and the payloads ``lto.ir``, ``code.ptx`` and ``source.cu``, and the C source of
   every host provider the stage calls (``host provider "x.c" fn …``, beside the
   contract), which `kernlink link` writes into the link directory. A file pack would
   carry that is a symbolic link, or lies outside the component's folder (a provider
   named ``../x.c``), is refused (``E-IO``, :func:`own_file`): a package carries what
   pack read to whoever receives it.

The same source, contract and toolkit always give the same bytes (with NVRTC):
the compiler is given the file's base name, and runs with the working directory
set to the filesystem root, because NVRTC records the working directory in its
LTO IR; nothing time- or host-dependent is recorded. Where the object disagrees with the contract (L-SYMBOL, L-HANDLE,
L-PARAMS), the package is still written — the checker decides — and the
disagreements come back as warnings.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from checker import conformance, handles
from checker.clauses import l_conform, l_handle, l_params, l_symbol
from checker.params import params_problems
from contract_lang import ast as A
from contract_lang.parser import parse_file
from contract_lang.printer import print_node
from diagnostics import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.files import atomic_write_bytes, read_source
from diagnostics.symbols import Code
from package.captured import Captured
from package.kpkg import pack_bytes, valid_payload_name
from package.manifest import LTO_PAYLOAD, SOURCE_PAYLOAD, manifest_for
from packing import binding, frontends, layout, opened
from toolchain.cuda import CompileResult, compile_nvcc, nvcc_version, nvrtc_options, nvrtc_version, stable_cwd
from toolchain.symbols import LTO_PTX_EXTRA, Prototype, compile_lto_and_ptx, ptx_record, read_ptx_symbols

Compiler = Literal["nvrtc", "nvcc"]
COMPILERS: tuple[Compiler, ...] = ("nvrtc", "nvcc")


@dataclass(frozen=True)
class PackResult:
    """A written package and what went into it."""

    path: Path
    stage: A.Stage
    target: str
    toolkit: str
    captured: Captured
    prototypes: Mapping[str, Prototype]
    size: int
    sha256: str
    warnings: tuple[Diagnostic, ...]
    seconds: Mapping[str, float]  # compile, capture, conform, write
    opened: opened.Opened | None = None  # what the compile read (None: the compiler did not say)
    # the (role, "ring `R`" / "barrier `B`") steps its code leaves to the composed check: the role calls other stages'
    # callables (a staging side), or passes a ring's barrier or a barrier's ID to one and lacks a step of it
    deferred: tuple[tuple[str, str], ...] = ()
    # the (role, barrier, counter) orderings its code leaves to the composed check (checker/conformance/orders.py)
    deferred_orders: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class CompileFlags:
    """What `kernlink pack` passes the front end besides the source: ``-I``, ``-D``, ``--std``, CUTLASS.

    ``cutlass`` adds the ``nvidia-cutlass`` wheel's headers and, for NVRTC, ``-default-device``
    (CuTe's unannotated helpers are device functions). ``source`` False packs no source: a
    binary-only package (LTO IR, PTX and manifest), which links but has no one-unit control.
    """

    include_dirs: tuple[Path, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()
    std: str = "c++17"
    cutlass: bool = False
    source: bool = True

    def dirs(self, source_dir: Path) -> list[Path]:
        found = [source_dir, *self.include_dirs]
        if self.cutlass:
            from toolchain.cuda import cutlass_include_dir

            folder = cutlass_include_dir()
            if folder is None:
                raise DiagnosticError(
                    [
                        Diagnostic(
                            Code.E_PACK,
                            "`--cutlass` needs the CUTLASS headers, and the `nvidia-cutlass` wheel is not installed",
                            helps=(
                                "install it (`pip install 'kernlink[cute]'`), or pass its `include` folder with `-I`",
                            ),
                        )
                    ]
                )
            found.append(folder)
        return found

    def extra(self, compiler: Compiler) -> tuple[str, ...]:
        return ("-default-device",) if self.cutlass and compiler == "nvrtc" else ()


#: Local headers a package carries (quoted includes found beside the source), so it rebuilds alone.
_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"/\\]+\.(?:h|hpp|cuh|inc))"', re.M)


def own_file(path: Path, folder: Path, what: str) -> None:
    """Refuse to carry ``path`` unless it is the component's own: not a symbolic link, and inside
    ``folder`` once every link on the way is followed. ``E-IO`` naming the path (exit 2): a package
    carries what pack read, so a link to ``~/.ssh/id_rsa`` or a provider named ``../../x.c`` would
    ship someone's file to whoever gets the package."""
    why = None
    if path.is_symlink():
        why = "it is a symbolic link"
    elif not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder)):
        why = f"it lies outside the component's folder `{folder}`"
    if why is not None:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_IO,
                    f"refusing to pack {what} `{path}`: {why}",
                    notes=("a package carries the files pack reads, to whoever gets the package",),
                    helps=("copy the file itself into the component's folder, beside the source and the contract",),
                )
            ]
        )


def local_headers(text: str, folder: Path) -> dict[str, bytes]:
    """The quoted ``#include "x.h"`` files of ``text`` that are beside it (followed one level deep each).

    Each must be the component's own (:func:`own_file`)."""
    found: dict[str, bytes] = {}
    pending = [text]
    while pending:
        for name in _LOCAL_INCLUDE.findall(pending.pop()):
            path = folder / name
            if name in found or name in (LTO_PAYLOAD, SOURCE_PAYLOAD) or not path.is_file():
                continue
            own_file(path, folder, "the header")
            found[name] = read_source(path, display=name).encode("utf-8")
            pending.append(found[name].decode("utf-8"))
    return found


#: Every `#include` line, and what follows the directive.
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include(_next)?\b(.*)$", re.M)
_PLAIN_INCLUDE = re.compile(r'^[ \t]*(?:"([^"]+)"|<([^>]+)>)[ \t]*(?://.*|/\*.*)?$')
#: A folder beside the source with more entries than this is not mirrored (see ``alone_inputs``).
MIRROR_LIMIT = 2048


def alone_inputs(
    text: str, source: Path, name: str, target: str, stage: A.Stage, flags: CompileFlags
) -> tuple[binding.Alone, tuple[str, ...]] | None:
    """The compile of the package's own rebuild (packing/binding.py ``Alone``) and the names it must not
    find, when that compile is provably the one beside the source folder; else None.

    Beside its folder, NVRTC looks an include up in the folder, then in the system headers. In
    the rebuild it finds the carried headers in memory, then the system headers. The two agree
    when every file in the folder is given under its relative path: a carried one as itself,
    any other as an ``#error`` header (``absent``), so that a compile that would open it fails,
    and a compile that succeeds opened exactly the carried files. That needs every include in the
    source and its headers to be a plain relative name (no ``.``/``..`` segment, no macro, no
    ``#include_next``), no ``__has_include`` (it sees a file without opening it), no symbolic link
    in the folder and at most :data:`MIRROR_LIMIT` files, and no file there that a system header
    could look for without opening it (``__has_include``: it would see the file beside the source
    but not in the rebuild): none that a system header folder also has, and none without a suffix
    (CUDA's headers probe ``<random>``, ``<__config>``, ``<ext/random>``); no ``-I`` folder and a
    carried source.
    """
    if not flags.source or flags.include_dirs:
        return None
    folder = source.parent
    headers = local_headers(text, folder)
    for body in (text, *(h.decode("utf-8") for h in headers.values())):
        if "__has_include" in body or not all(_plain(m.group(1), m.group(2)) for m in _INCLUDE.finditer(body)):
            return None
    absent = _mirror(folder, {name, *headers})
    if absent is None:
        return None
    system = [
        Path(o.split("=", 1)[1])
        for o in nvrtc_options(target)
        if o.startswith(("--include-path=", "--use-bundled-headers="))  # the CUDA headers NVRTC is given
    ]
    if flags.cutlass:
        system += binding.extra_include_dirs({"cutlass": True})
    if any((d / n).exists() for d in system for n in absent):
        return None  # a file beside the source shadows a system header: only the folder's compile is the author's
    if any("." not in n.rsplit("/", 1)[-1] for n in absent):
        return None  # the names system headers probe with `__has_include` (`random`, `__config`) have no suffix
    alone = binding.Alone(
        text.encode("utf-8"),
        tuple(sorted(headers.items())),
        name,
        target,
        flags.std,
        tuple(sorted(flags.defines)),
        flags.extra("nvrtc"),
        flags.cutlass,
        layout.probe_source(layout.params_blocks(stage), stage.name),
    )
    return alone, absent


def _run_alone(
    alone: tuple[binding.Alone, tuple[str, ...]] | None, trace: opened.Trace
) -> tuple[CompileResult, str] | None:
    """``alone``'s compile, or None when there is none or it fails: a source that sees more than it
    carries, or that does not compile, is compiled beside its folder as always (whose errors are
    the ones reported)."""
    if alone is None:
        return None
    try:
        return alone[0].run(alone[1], trace.options("alone"))
    except (DiagnosticError, UnicodeDecodeError):
        trace.failed()
        return None


def _plain(next_: str | None, rest: str) -> bool:
    match = _PLAIN_INCLUDE.match(rest)
    if next_ or match is None:
        return False
    included = match.group(1) or match.group(2)
    return not included.startswith("/") and all(part not in ("", ".", "..") for part in included.split("/"))


def _mirror(folder: Path, carried: set[str]) -> tuple[str, ...] | None:
    """The relative paths of the files under ``folder`` besides ``carried``; None when a symbolic
    link is there, a folder cannot be read, or there are more than :data:`MIRROR_LIMIT`."""
    found: list[str] = []
    errors: list[OSError] = []
    for root, dirs, files in os.walk(folder, onerror=errors.append):
        here = Path(root)
        for entry in (*dirs, *files):
            if (here / entry).is_symlink():
                return None
        for file in files:
            found.append((here / file).relative_to(folder).as_posix())
        if errors or len(found) > MIRROR_LIMIT:
            return None
    return tuple(sorted(n for n in found if n not in carried))


@dataclass(frozen=True)
class Built:
    """A package's manifest and payloads before they are written."""

    stage: A.Stage
    target: str
    toolkit: str
    captured: Captured
    prototypes: Mapping[str, Prototype]
    manifest: dict[str, Any]
    payloads: dict[str, bytes]
    seconds: dict[str, float]
    code: conformance.CodeFacts | None = None
    ptx: str | None = None
    source_display: str | None = None
    #: The compile, when it was the package's own rebuild (binding.Alone): what `pack` records as
    #: the link's binding verdict once the file is written.
    alone: binding.Alone | None = None
    opened: opened.Opened | None = None

    @property
    def lowered(self) -> bool:
        """The PTX is nvJitLink's lowering (here) of the LTO IR: the package is bound by construction."""
        return "ptx" in self.manifest["compile"]


def default_output(source: str | Path) -> Path:
    """``<source dir>/build/<stem>.kpkg``: where pipelines' ``use … from "build/x.kpkg"`` look."""
    src = Path(source)
    return src.parent / "build" / f"{src.stem}.kpkg"


def pack(
    source: str | Path,
    contract: str | Path,
    output: str | Path | None = None,
    *,
    compiler: Compiler = "nvrtc",
    stage: str | None = None,
    strict: bool = False,
    flags: CompileFlags | None = None,
) -> PackResult:
    """Compile, capture and write one package; raises ``DiagnosticError`` when nothing can be written.

    ``strict``: a conformance violation, or a site the analysis cannot decide, is an
    error and no package is written.
    """
    built = build(source, contract, compiler=compiler, stage=stage, flags=flags)
    out = Path(output) if output is not None else default_output(source)
    if strict:
        bad = [d for d in conformance_findings(built, out, strict=True) if d.is_error]
        if bad:
            raise DiagnosticError(bad)
    start = time.perf_counter()
    data = pack_bytes(built.manifest, built.payloads)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DiagnosticError(
            [Diagnostic(Code.E_IO, f"cannot create directory `{out.parent}`: {err.strerror or err}")]
        ) from err
    atomic_write_bytes(out, data)
    if built.lowered and built.ptx is not None:
        binding.remember_pass(out, built.stage, built.payloads[LTO_PAYLOAD], built.ptx, built.alone)
    seconds = {**built.seconds, "write": time.perf_counter() - start}
    return PackResult(
        out,
        built.stage,
        built.target,
        built.toolkit,
        built.captured,
        built.prototypes,
        len(data),
        hashlib.sha256(data).hexdigest(),
        (*findings(built, out), *conformance_findings(built, out)),
        seconds,
        built.opened,
        _deferred(built),
        _deferred_orders(built),
    )


def _deferred_orders(built: Built) -> tuple[tuple[str, str, str], ...]:
    """The counter orderings a component's code alone cannot show (checker/conformance/orders.py: ``deferred``)."""
    if built.code is None:
        return ()
    from checker.conformance.orders import deferred

    return tuple(deferred(built.stage, built.code))


def _deferred(built: Built) -> tuple[tuple[str, str], ...]:
    """The staging sides, and the ring or named-barrier steps a role lacks, that a component's code alone cannot show
    (checker/conformance/staging.py, steps.py: ``deferred``): (role, ``ring `R```/``barrier `B```)."""
    if built.code is None:
        return ()
    from checker.conformance.staging import deferred
    from checker.conformance.steps import deferred as deferred_steps

    staged = [(role, f"ring `{ring}`") for role, ring in deferred(built.stage, built.code)]
    return tuple(sorted({*staged, *deferred_steps(built.stage, built.code)}))


def build(
    source: str | Path,
    contract: str | Path,
    *,
    compiler: Compiler = "nvrtc",
    stage: str | None = None,
    flags: CompileFlags | None = None,
) -> Built:
    """Everything `pack` writes, without writing it."""
    with opened.tracing(compiler) as trace:  # what the compile opens: `kernlink build` keys on it
        return _build(source, contract, compiler, stage, flags, trace)


def _build(
    source: str | Path,
    contract: str | Path,
    compiler: Compiler,
    stage: str | None,
    flags: CompileFlags | None,
    trace: opened.Trace,
) -> Built:
    src_path = Path(source)
    display = str(source)
    own_file(src_path, src_path.parent, "the source")
    text = read_source(src_path, display=display)
    chosen = choose_stage(contract, stage)
    target = chosen.target.name if chosen.target is not None else None
    if target is None:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_PACK,
                    f"stage `{chosen.name}` names no `target`",
                    labels=(Label(chosen.span, "this stage"),),
                    helps=("add `target sm_90a` (or the architecture it is written for) to the stage",),
                )
            ]
        )
    text, chosen, name = frontends.prepare(src_path, text, chosen, target)  # a TileLang stage: its component
    flags = flags or CompileFlags()
    providers = provider_sources(chosen, Path(contract).parent)
    include = flags.dirs(src_path.parent.resolve())
    defines = dict(flags.defines)
    extra = flags.extra(compiler)
    start = time.perf_counter()
    blocks = layout.params_blocks(chosen)
    probed = text + "\n" + layout.probe_source(blocks, chosen.name)
    alone = alone_inputs(text, src_path, name, target, chosen, flags) if compiler == "nvrtc" else None
    ran = _run_alone(alone, trace)
    ptx_or_error: str | tuple[Diagnostic, ...]
    try:
        with stable_cwd():  # NVRTC records the working directory in LTO IR, -lineinfo in `.file`
            if ran is not None:  # the package's own rebuild (packing/binding.py), run once, here
                result, ptx_or_error = ran
            elif compiler == "nvcc":  # the probed source to LTO IR, lowered by nvJitLink as NVRTC's is
                result = compile_nvcc(
                    probed,
                    name,
                    arch=target,
                    std=flags.std,
                    include_dirs=include,
                    defines=defines,
                    extra_options=(*extra, *LTO_PTX_EXTRA, *trace.options("folder")),
                )
                ptx_or_error = _lowered(result.ltoir, target)
            else:  # one compile: the probed source to LTO IR, whose PTX nvJitLink gives (toolchain/symbols.py)
                result, ptx_or_error = compile_lto_and_ptx(
                    probed.encode(),
                    name,
                    arch=target,
                    std=flags.std,
                    include_dirs=include,
                    defines=defines,
                    extra_options=(*extra, *LTO_PTX_EXTRA, *trace.options("folder")),
                )
    except DiagnosticError as err:
        trace.failed()
        if _probe_only(err):
            raise _probe_failed(err, chosen, display) from None
        raise _renamed(_without_probe(err), name, display) from None
    compiled = time.perf_counter()
    read = trace.read(
        "alone" if ran is not None else "folder", source=src_path.resolve(), memory=src_path.parent.resolve()
    )
    if not isinstance(ptx_or_error, str):
        raise _lowering_failed(ptx_or_error, display)
    ptx = ptx_or_error
    ptx = binding.normalise_ptx(ptx)  # `.file 1 "/tmp/…/x.cu"` -> `"x.cu"`: no host path in the package
    symbols = read_ptx_symbols(ptx).without([layout.PROBE_SYMBOL, layout.probe_keeper(chosen.name)])
    toolkit = _toolkit(compiler)
    captured = Captured(
        frozenset(symbols.defined),
        frozenset(symbols.needed),
        layout.read_probe(ptx, blocks),
        toolkit,
        target,
        tuple(sorted(symbols.prototypes().items())),
    )
    manifest = manifest_for(chosen.name, chosen.version, target, print_node(chosen), toolkit, captured)
    manifest["captured"]["prototypes"] = {k: v.as_json() for k, v in sorted(symbols.prototypes().items())}
    manifest["compile"] = {
        "compiler": compiler,
        "source": name,
        "options": [o for o in result.options if not _is_path_option(o) and not opened.is_dependency_option(o)],
    }
    # the PTX is the LTO IR's (what the binding, packing/binding.py, lowers again)
    manifest["compile"]["options"] = [o for o in manifest["compile"]["options"] if o not in LTO_PTX_EXTRA]
    manifest["compile"]["ptx"] = ptx_record()
    captured_at = time.perf_counter()
    code = conformance.derive(ptx)
    manifest[conformance.MANIFEST_KEY] = code.as_json()
    payloads = {LTO_PAYLOAD: result.ltoir, conformance.PTX_PAYLOAD: ptx.encode("utf-8"), **providers}
    if flags.cutlass:
        manifest["compile"]["cutlass"] = True  # a rebuild (packing/binding.py) adds the same headers
    if flags.source:  # the source and the local headers it includes: the package rebuilds alone
        payloads[SOURCE_PAYLOAD] = text.encode("utf-8")
        payloads.update(local_headers(text, src_path.parent))
    else:
        manifest["compile"]["binary_only"] = True
    seconds = {
        "compile": compiled - start,
        "capture": captured_at - compiled,
        "conform": time.perf_counter() - captured_at,
    }
    return Built(
        chosen,
        target,
        toolkit,
        captured,
        symbols.prototypes(),
        manifest,
        payloads,
        seconds,
        code,
        ptx,
        display,
        alone[0] if alone is not None and ran is not None else None,
        None if read is None else opened.Opened(read, opened.search_folders(result.options)),
    )


def called_providers(stage: A.Stage) -> tuple[A.HostProvider, ...]:
    """The stage's host providers the launch helpers call (those with an ``fn``), in contract order."""
    return tuple(p for p in stage.items if isinstance(p, A.HostProvider) and p.function is not None)


def provider_payload(provider: A.HostProvider) -> str:
    """The payload name a called provider's C source has in the package: its file name."""
    return Path(provider.library).name


def provider_sources(stage: A.Stage, folder: Path) -> dict[str, bytes]:
    """The C sources of the stage's called host providers (beside the contract), by payload name."""
    found: dict[str, bytes] = {}
    for provider in called_providers(stage):
        name = provider_payload(provider)
        path = folder / provider.library
        problem = None
        if not valid_payload_name(name) or not name.endswith(".c"):
            problem = "is not the name of a C source file (`NAME.c`)"
        elif name in found or name in (LTO_PAYLOAD, SOURCE_PAYLOAD, conformance.PTX_PAYLOAD):
            problem = "has the file name of another payload of the package"
        elif not path.is_file() and not path.is_symlink():
            problem = f"does not exist (looked for `{path}`)"
        if problem is not None:
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_PACK,
                        f"the host provider `{provider.library}` of `{stage.name}` {problem}",
                        labels=(Label(provider.span, "this provider"),),
                        helps=("a called provider (`fn`) is a C source file, named relative to the contract's folder",),
                    )
                ]
            )
        own_file(path, folder, "the host provider")
        found[name] = read_source(path, display=str(path)).encode("utf-8")
    return found


def choose_stage(contract: str | Path, name: str | None) -> A.Stage:
    """The contract file's one stage, or the one named ``name``."""
    source, _ = parse_file(contract, "contract", display=str(contract))
    stages = source.stages
    if name is not None:
        for stage in stages:
            if stage.name == name:
                return stage
        listed = ", ".join(f"`{s.name}`" for s in stages)
        raise DiagnosticError(
            [Diagnostic(Code.E_PACK, f"`{contract}` has no stage `{name}`", notes=(f"its stages: {listed}",))]
        )
    if len(stages) != 1:
        listed = ", ".join(f"`{s.name}`" for s in stages)
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_PACK,
                    f"`{contract}` holds {len(stages)} stages; a package holds one",
                    labels=tuple(Label(s.span, "a stage", primary=i == 0) for i, s in enumerate(stages)),
                    notes=(f"its stages: {listed}",),
                    helps=("choose one with `--stage NAME`",),
                )
            ]
        )
    return stages[0]


def prototypes_of(manifest: Mapping[str, Any]) -> dict[str, Prototype]:
    """The ``captured.prototypes`` of a stage manifest (empty for packages that predate them)."""
    captured = manifest.get("captured")
    table = captured.get("prototypes") if isinstance(captured, Mapping) else None
    if not isinstance(table, Mapping):
        return {}
    try:
        return {str(k): Prototype.from_json(v) for k, v in table.items()}
    except (KeyError, TypeError, ValueError):
        return {}


def findings(built: Built, output: Path) -> list[Diagnostic]:
    """The contract disagreements of a built package, as warnings (the checker rejects them)."""
    out: list[Diagnostic] = []
    stage, captured = built.stage, built.captured
    worded = [(f, l_symbol.describe(f)) for f in handles.symbol_problems(stage, captured, built.prototypes)]
    worded += [(f, l_handle.describe(f)) for f in handles.handle_problems(stage, captured, built.prototypes)]
    for finding, (message, help_text) in worded:
        out.append(
            Diagnostic(
                finding.clause,
                message,
                severity=Severity.WARNING,
                labels=_label(finding.node, "in this contract item"),
                notes=("the package was written; `kernlink check` rejects this composition",),
                helps=(help_text,) if help_text else (),
                data=(("problem", finding.problem), ("symbol", finding.symbol)),
            )
        )
    for problem in params_problems(stage, captured):
        said = l_params.disagreement(problem, stage.name, str(output))
        out.append(
            dataclasses.replace(
                said,
                severity=Severity.WARNING,
                notes=(*said.notes, "the package was written; `kernlink check` rejects this composition"),
            )
        )
    return out


def conformance_findings(built: Built, output: Path, *, strict: bool = False) -> list[Diagnostic]:
    """The L-CONFORM findings of a built package: warnings (errors with ``strict``), undecided sites as notes."""
    if built.code is None:
        return []
    severity = Severity.ERROR if strict else Severity.WARNING
    return l_conform.diagnostics(
        built.stage,
        built.code,
        ptx_name=conformance.ptx_display(str(output)),
        source_name=built.source_display,
        ptx_text=built.ptx,
        strict=strict,
        severity=severity,
    )


def _label(node: A.Node | None, text: str) -> tuple[Label, ...]:
    return (Label(node.span, text),) if node is not None and node.span.line > 0 else ()


def _toolkit(compiler: Compiler) -> str:
    version = nvcc_version() if compiler == "nvcc" else nvrtc_version()
    return f"{compiler} {version[0]}.{version[1]}" if version else compiler


def _is_path_option(option: str) -> bool:
    return option.startswith(("--include-path=", "-I", "--use-bundled-headers="))


def _renamed(err: DiagnosticError, name: str, display: str) -> DiagnosticError:
    """Compiler diagnostics name the file as the compiler saw it; point them at the real path."""

    def fix(label: Label) -> Label:
        if label.span.file != name:
            return label
        return dataclasses.replace(label, span=dataclasses.replace(label.span, file=display))

    return DiagnosticError(
        [dataclasses.replace(d, labels=tuple(fix(lab) for lab in d.labels)) for d in err.diagnostics]
    )


def _probe_failed(err: DiagnosticError, stage: A.Stage, display: str) -> DiagnosticError:
    names = ", ".join(f"`{b.name}`" for b in layout.params_blocks(stage)) or "none"
    notes = tuple(
        n
        for d in err.diagnostics
        for n in (*(f"{lab.span.file}:{lab.span.line}: {d.message}" for lab in d.labels[:1]), *d.notes)
    )
    return DiagnosticError(
        [
            Diagnostic(
                Code.E_PACK,
                f"the params probe for `{display}` does not compile",
                labels=tuple(Label(b.span, "declared here") for b in layout.params_blocks(stage))[:1],
                notes=(f"params blocks: {names}", *notes),
                helps=(
                    "declare each params struct once, at global scope, as `struct NAME { … };` with plain "
                    "(non-bit-field) members named as in the contract",
                ),
            )
        ]
    )


def _in_probe(d: Diagnostic) -> bool:
    return any(label.span.file == layout.PROBE_FILE for label in d.labels)


def _probe_only(err: DiagnosticError) -> bool:
    """The compile failed in the params probe only (the component's own code compiles)."""
    return any(_in_probe(d) for d in err.diagnostics) and all(_in_probe(d) for d in err.diagnostics if d.is_error)


def _without_probe(err: DiagnosticError) -> DiagnosticError:
    """The compiler's diagnostics about the component's code, not about the probe appended to it."""
    return DiagnosticError([d for d in err.diagnostics if not _in_probe(d)] or list(err.diagnostics))


def _lowered(ltoir: bytes, target: str) -> str | tuple[Diagnostic, ...]:
    """nvJitLink's PTX of one component's LTO IR (packing/binding.py), or its diagnostics."""
    try:
        return binding.lower(ltoir, target)
    except DiagnosticError as err:
        return tuple(err.diagnostics)


def _lowering_failed(found: tuple[Diagnostic, ...], display: str) -> DiagnosticError:
    """nvJitLink could not lower the component's LTO IR to PTX (the compile itself succeeded)."""
    notes = tuple(n for d in found for n in (d.message, *d.notes))
    return DiagnosticError(
        [
            Diagnostic(
                Code.E_PACK,
                f"nvJitLink could not lower the LTO IR of `{display}` to PTX",
                notes=notes,
                helps=(
                    "report this with the component's source: NVRTC compiled it, nvJitLink did not take its LTO IR",
                ),
            )
        ]
    )
