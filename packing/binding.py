"""The binding: the code a package's check read is the code that is linked.

A package's hashes prove integrity, not authenticity: whoever edits a package can recompute
them. The check reads a package's contract, its ``captured`` facts (symbols, prototypes,
params layouts) and its ``code.ptx`` (L-CONFORM; the manifest's ``conformance`` facts are
derived from that payload again on reading, package/manifest.py); the link links its
``lto.ir``. This module ties the two, in two steps:

1. **Lowering** (every package, at check with ``--strict``/``--require-binding`` and at every
   link): nvJitLink lowers the ``lto.ir`` payload to PTX with kernlink's own options
   (:data:`toolchain.symbols.PTX_LINK_OPTIONS`; nothing the manifest records is replayed), as
   ``kernlink pack`` made ``code.ptx``. The package is *bound* when that PTX is byte-identical
   to ``code.ptx`` (``.file`` paths reduced to base names) and the manifest's ``captured``
   symbols, prototypes and params layouts are what that PTX declares. Otherwise it is
   - *forged* (``L-INTEGRITY``): its ``compile.ptx`` record says ``code.ptx`` is this
     nvJitLink's lowering of its ``lto.ir`` and it is not, or its ``captured`` facts are not
     its code's;
   - *unbound*: it records another lowering (another nvJitLink or other options, a PTX of its
     own compile by nvcc, no record at all) or carries no ``code.ptx``; nothing shows that the
     code checked is the code linked.
2. **Rebuild** (at link, a bound package that carries its source and was packed by this
   NVRTC): ``source.cu`` (with the params probe) is compiled again with the recorded options
   and only the headers the package carries (:class:`Alone`: NVRTC, headers in memory, from
   the filesystem root) and lowered again; ``lto.ir`` and ``code.ptx`` must be byte-identical
   to the rebuild (``L-INTEGRITY``), so the source it ships is the source of its code. A
   package that cannot be rebuilt here is still bound by step 1.

An unbound package is an ``I-BINDING`` note naming why, and at link its linked code (the
PTX its ``lto.ir`` lowers to) is checked against its contract there (L-CONFORM), so even
then what links keeps its contract. ``--strict`` and ``--require-binding`` refuse it
(``L-INTEGRITY``) at check, link and build.

A bound verdict is remembered on disk (:func:`diagnostics.files.user_cache_dir`, ``binding/``)
as what it was computed from — the package's SHA-256, each payload's, the stage's, the mode
and the deciding environment (nvJitLink/NVRTC versions, the header wheels, the code of the
modules that decide) — with an HMAC under a per-user secret (``binding/key``, 0600, owned by
the user). An entry is used only when every recorded hash equals the package's at hand and its
HMAC verifies; anything else (a planted marker, another package's entry, a secret that is not
the user's own) is ignored and the verdict computed again. ``KERNLINK_NO_BINDING_CACHE=1``
turns the cache off. ``kernlink pack`` records the verdicts of what it wrote by construction
(:func:`remember_pass`).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from checker.clauses import l_integrity
from checker.conformance import PTX_PAYLOAD
from contract_lang import ast as A
from contract_lang.printer import print_node
from diagnostics.files import atomic_write_bytes, open_regular, read_capped, user_cache_dir
from diagnostics.model import Diagnostic, DiagnosticError
from package.captured import Captured
from package.integrity import IntegrityFinding
from package.kpkg import Package, read_package, valid_payload_name
from package.loader import Inputs, Unread
from package.manifest import LTO_PAYLOAD, SOURCE_PAYLOAD, captured_from_json, refused_option
from packing import layout
from toolchain.cuda import (
    CompileResult,
    isolated,
    nvjitlink_here,
    nvjitlink_version,
    nvrtc_version,
    stable_cwd,
)
from toolchain.symbols import LTO_PTX_EXTRA, PTX_LINK_OPTIONS, compile_lto_and_ptx, ptx_link_options, read_ptx_symbols

Mode = Literal["lowered", "rebuilt"]
_FILE_PATH = re.compile(r'^(\s*\.file\s+\d+\s+)"(?:[^"]*/)?([^"/]*)"', re.M)
_TARGET = re.compile(r"sm_[0-9]{2,3}[a-z]?")


def normalise_ptx(ptx: str) -> str:
    """``.file 1 "/tmp/…/x.cu"`` → ``"x.cu"``: what a package stores has no host path."""
    return _FILE_PATH.sub(r'\1"\2"', ptx)


HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inc")


def carried_headers(payloads: Mapping[str, bytes]) -> dict[str, bytes]:
    """The local headers a package carries beside its source (``kernlink pack`` adds them)."""
    return {name: blob for name, blob in sorted(payloads.items()) if name.endswith(HEADER_SUFFIXES)}


def recorded_options(options: object) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """``-std``, the ``-D`` defines and the other options of a manifest's ``compile.options``.

    Only what :func:`package.manifest.refused_option` allows is ever recorded; ``-I`` is not
    replayed (a rebuild is given the carried headers in memory), nor kernlink's own flags.
    """
    listed = [str(o) for o in options] if isinstance(options, list) else []
    std = next((o.split("=", 1)[1] for o in listed if o.startswith(("-std=", "--std="))), "c++17")
    defines: dict[str, str] = {}
    for o in listed:
        if o.startswith("-D"):
            key, _, value = o[2:].partition("=")
            defines[key] = value
    own = ("-arch=", "-dlto", "-rdc=true", "-std=", "--std=", "-D", "-ltoir", "-I", "--include-path=", "-lineinfo")
    return std, defines, tuple(o for o in listed if not o.startswith(own))


def extra_include_dirs(compile_info: Mapping[str, object]) -> list[Path]:
    """Header folders a package's compile record names by kind (CUTLASS), found on this machine."""
    if compile_info.get("cutlass"):
        from toolchain.cuda import cutlass_include_dir

        folder = cutlass_include_dir()
        return [folder] if folder is not None else []
    return []


# ----------------------------------------------------------------- the verdict


@dataclass(frozen=True)
class Verdict:
    """What the binding found for one package's bytes.

    ``findings``: the package is forged (L-INTEGRITY). ``unbound``: why it cannot be bound (the
    words of an I-BINDING note), with ``lowered``, the PTX its ``lto.ir`` lowers to (None when
    nvJitLink here cannot lower it). Neither: bound.
    """

    findings: tuple[IntegrityFinding, ...] = ()
    unbound: str | None = None
    lowered: str | None = None

    @property
    def bound(self) -> bool:
        return not self.findings and self.unbound is None


_BOUND = Verdict()
#: Verdicts of this process, by (package SHA-256, stage text, mode); at most this many.
_MEMO: dict[tuple[str, str, Mode], Verdict] = {}
_MEMO_SIZE = 64


def forget() -> None:
    """Drop the verdicts this process keeps (the disk cache stays)."""
    _MEMO.clear()


def decide(path: str, stage: A.Stage, *, rebuild: bool, sha256: str | None = None) -> Verdict:
    """The binding verdict of the package at ``path`` (read once, here), for ``stage`` (its contract).

    ``rebuild``: also rebuild its source when it can be (at link). ``sha256``: the package's hash
    as the caller read it (the link, whose LTO IR it links): other bytes here are ``L-INTEGRITY``.
    Raises :class:`DiagnosticError` when the package cannot be read or is not intact (L-INTEGRITY).
    """
    with l_integrity.worded():
        pkg = read_package(path)
    if sha256 is not None and pkg.sha256 != sha256:
        raise DiagnosticError([l_integrity.defect(IntegrityFinding(path, "changed"))])
    inputs = rebuild_inputs(pkg, stage) if rebuild else None
    mode: Mode = "rebuilt" if isinstance(inputs, Alone) else "lowered"
    text = print_node(stage)
    key = (pkg.sha256, text, mode)
    known = _MEMO.get(key)
    if known is None and _cached_pass(pkg, text, mode):
        known = _BOUND
    if known is None:
        known = _decide(path, pkg, stage, inputs if isinstance(inputs, Alone) else None)
        if known.bound:
            _record_pass(pkg, text, mode)
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = known
    return known


def _decide(path: str, pkg: Package, stage: A.Stage, alone: Alone | None) -> Verdict:
    target = str(pkg.manifest.get("target"))
    if _TARGET.fullmatch(target) is None:
        return Verdict(unbound=f"its target `{target[:64]}` is not an architecture nvJitLink lowers for")
    failed, lowered = "", None
    try:
        lowered = lower(pkg.payloads[LTO_PAYLOAD], target)
    except DiagnosticError as err:
        failed = "; ".join(d.message for d in err.diagnostics)[:400]
    if alone is not None:  # the rebuild, when it runs, decides first: it names the payload that differs
        rebuilt = _rebuilt(path, pkg, alone)
        if rebuilt:
            return Verdict(tuple(rebuilt))
    if lowered is None:
        return Verdict(unbound=f"nvJitLink here cannot lower its LTO IR to PTX ({failed})")
    payload = pkg.payloads.get(PTX_PAYLOAD)
    if payload is None:
        return Verdict(unbound=f"it carries no `{PTX_PAYLOAD}`: none of its code was checked", lowered=lowered)
    if payload != lowered.encode("utf-8"):
        why = _other_lowering(pkg.manifest)
        if why is not None:
            return Verdict(unbound=why, lowered=lowered)
        return Verdict((_finding(path, "ptx-not-lowered", payload, lowered.encode("utf-8")),))
    mismatch = captured_mismatch(pkg, stage, lowered)
    if mismatch is not None:
        return Verdict((IntegrityFinding(path, "captured-not-code", (("what", mismatch),)),))
    return _BOUND


def lower(ltoir: bytes, target: str) -> str:
    """The PTX nvJitLink lowers ``ltoir`` to with :data:`PTX_LINK_OPTIONS`, ``.file`` paths normalised."""
    raw, _, _ = isolated(
        "nvjitlink", nvjitlink_here, [(LTO_PAYLOAD, ltoir)], list(ptx_link_options(target)), target, "ptx"
    )
    return normalise_ptx(bytes(raw).split(b"\0", 1)[0].decode("utf-8", errors="replace"))


def _other_lowering(manifest: Mapping[str, object]) -> str | None:
    """Why a ``code.ptx`` that is not this nvJitLink's lowering may still be honest; None when the
    package itself records that it is (then it is forged)."""
    compile_info = manifest.get("compile")
    if not isinstance(compile_info, Mapping):
        return "it has no `compile` record, and its `code.ptx` is not what its `lto.ir` lowers to here"
    record = compile_info.get("ptx")
    here = "{}.{}".format(*nvjitlink_version())
    if not isinstance(record, Mapping) or record.get("from") != LTO_PAYLOAD:
        how = f"compiled by `{compile_info.get('compiler')}`" if compile_info.get("compiler") != "nvrtc" else "older"
        return f"its `code.ptx` is not its `lto.ir`'s lowering (the package is {how}: its PTX is a compile of its own)"
    if record.get("options") != list(PTX_LINK_OPTIONS):
        return "its `code.ptx` was lowered from its `lto.ir` with other nvJitLink options than this kernlink's"
    if record.get("nvjitlink") != here:
        return (
            f"its `code.ptx` was lowered by nvJitLink {str(record.get('nvjitlink'))[:32]}; this kernlink's "
            f"nvJitLink {here} lowers its `lto.ir` to other PTX"
        )
    return None


def captured_mismatch(pkg: Package, stage: A.Stage, ptx: str) -> str | None:
    """What of the manifest's ``captured`` facts ``ptx`` (the package's code) does not declare; None: all of it."""
    try:
        recorded = captured_from_json(pkg.manifest["captured"])
    except (KeyError, TypeError, ValueError, IndexError):
        return "the `captured` record cannot be read"
    symbols = read_ptx_symbols(ptx).without([layout.PROBE_SYMBOL, layout.probe_keeper(stage.name)])
    try:
        params = layout.read_probe(ptx, layout.params_blocks(stage))
    except DiagnosticError:
        return "the params layouts (its code holds no params probe for this contract)"
    code = Captured(
        frozenset(symbols.defined),
        frozenset(symbols.needed),
        params,
        prototypes=tuple(sorted(symbols.prototypes().items())),
    )
    if recorded.defined_symbols != code.defined_symbols:
        return _listed("defined symbols", recorded.defined_symbols, code.defined_symbols)
    if recorded.needed_symbols != code.needed_symbols:
        return _listed("needed symbols", recorded.needed_symbols, code.needed_symbols)
    if recorded.params_layouts != code.params_layouts:
        return f"the params layouts (the manifest: {_layouts(recorded)}; the code: {_layouts(code)})"
    if recorded.prototypes != code.prototypes:
        wrong = next(
            (n for n, p in code.prototypes if recorded.prototype_map.get(n) != p),
            next(iter(recorded.prototype_map), ""),
        )
        return f"the prototype of `{wrong}`"
    return None


def _listed(what: str, recorded: frozenset[str], code: frozenset[str]) -> str:
    extra, missing = sorted(recorded - code), sorted(code - recorded)
    parts = [f"the manifest adds {', '.join(f'`{s}`' for s in extra[:4])}"] if extra else []
    parts += [f"leaves out {', '.join(f'`{s}`' for s in missing[:4])}"] if missing else []
    return f"the {what} ({'; '.join(parts)})"


def _layouts(captured: Captured) -> str:
    return (
        ", ".join(
            f"`{p.name}` {p.size} B: " + " ".join(f"{f}@{o}" for f, o, _ in p.fields) for p in captured.params_layouts
        )
        or "none"
    )


def _finding(path: str, case: Literal["ptx-not-lowered"], payload: bytes, lowered: bytes) -> IntegrityFinding:
    return IntegrityFinding(
        path,
        case,
        (
            ("payload", PTX_PAYLOAD),
            ("from", LTO_PAYLOAD),
            ("how", "nvJitLink {}.{}".format(*nvjitlink_version())),
            ("recorded", hashlib.sha256(payload).hexdigest()[:16]),
            ("found", hashlib.sha256(lowered).hexdigest()[:16]),
        ),
    )


# ----------------------------------------------------------------- what check and link report


def rebuild_problems(
    path: str, stage: A.Stage, *, require: bool = False, sha256: str | None = None
) -> list[Diagnostic]:
    """At link: L-INTEGRITY errors, and for an unbound package an I-BINDING note with the L-CONFORM
    findings of the code it links (``require``: the package is refused instead, L-INTEGRITY).
    ``sha256``: the package's hash as the link read it (:func:`decide`)."""
    try:
        verdict = decide(path, stage, rebuild=True, sha256=sha256)
    except DiagnosticError as err:
        return list(err.diagnostics)
    out = [l_integrity.defect(f) for f in verdict.findings]
    if verdict.unbound is None:
        return out
    if require:
        return [*out, l_integrity.defect(unbound_finding(path, verdict.unbound))]
    out.append(l_integrity.unbound_note(path, verdict.unbound, checked=verdict.lowered is not None))
    if verdict.lowered is not None:
        from checker import conformance
        from checker.clauses import l_conform

        code = conformance.derive(verdict.lowered)
        out += l_conform.diagnostics(
            stage,
            code,
            ptx_name=f"{conformance.ptx_display(path)}@{LTO_PAYLOAD}",
            source_name=conformance.source_display(path),
            ptx_text=verdict.lowered,
        )
    return out


def unbound_finding(path: str, why: str) -> IntegrityFinding:
    return IntegrityFinding(path, "unbound", (("why", why),))


def refuse_unbound(inputs: Inputs) -> None:
    """``--strict``/``--require-binding`` at check: every package of ``inputs`` that is forged or
    unbound is left out as not intact (``inputs.unread``, L-INTEGRITY), like a corrupt one."""
    kept = []
    for entry in inputs.candidates:
        if entry.package is None:
            kept.append(entry)
            continue
        try:
            verdict = decide(entry.package, entry.stage, rebuild=False)
        except DiagnosticError:
            kept.append(entry)  # read and verified by the loader a moment ago; the check reports it
            continue
        if verdict.bound:
            kept.append(entry)
            continue
        found = verdict.findings[0] if verdict.findings else unbound_finding(entry.package, verdict.unbound or "")
        inputs.unread.append(Unread(found, entry.use))
    inputs.candidates[:] = kept


# ----------------------------------------------------------------- the rebuild from source


@dataclass(frozen=True)
class Alone:
    """The compile a rebuild repeats: a package's source with the params probe and only the headers
    it carries, given to NVRTC in memory by their include names (the source, too, under its own
    name), with the recorded options, from the filesystem root; then nvJitLink's lowering to PTX.

    ``kernlink pack`` runs this very compile when it can show the source sees nothing else
    (packing/pack.py ``alone_inputs``): a package whose rebuild inputs, read back from its file,
    equal the ones it was packed with passes this check by construction (:func:`remember_pass`).
    """

    source: bytes
    headers: tuple[tuple[str, bytes], ...]
    name: str
    target: str
    std: str
    defines: tuple[tuple[str, str], ...]
    extra: tuple[str, ...]  # recorded, without LTO_PTX_EXTRA
    cutlass: bool
    probe: str

    def run(self, absent: Sequence[str] = (), options: Sequence[str] = ()) -> tuple[CompileResult, str]:
        """The compile and its normalised PTX. Each of ``absent`` is an include name that must not be
        found: it is given as a header that is an ``#error``. ``options`` are added for this run only
        (``kernlink pack`` asks what the compile opened: packing/opened.py). Raises
        :class:`DiagnosticError` (the compile or the lowering) and ``UnicodeDecodeError``."""
        text = self.source.decode("utf-8") + "\n" + self.probe
        given = dict(self.headers)
        given.setdefault(Path(self.name).name, self.source)
        poison = {
            n: f'#error "`{n}` is beside the source, and the package does not carry it"\n'.encode() for n in absent
        }
        with stable_cwd():
            result, ptx = compile_lto_and_ptx(
                text.encode(),
                self.name,
                arch=self.target,
                include_dirs=extra_include_dirs({"cutlass": self.cutlass}),
                headers=tuple(sorted({**poison, **given}.items())),
                defines=dict(self.defines),
                std=self.std,
                extra_options=(*self.extra, *LTO_PTX_EXTRA, *options),
            )
        if not isinstance(ptx, str):
            raise DiagnosticError(list(ptx))
        return result, normalise_ptx(ptx)


def rebuild_inputs(pkg: Package, stage: A.Stage) -> Alone | str:
    """What a rebuild of ``pkg`` compiles, or why it cannot be rebuilt here."""
    compile_info = pkg.manifest.get("compile")
    source = pkg.payloads.get(SOURCE_PAYLOAD)
    ptx = pkg.payloads.get(PTX_PAYLOAD)
    if not isinstance(compile_info, dict) or source is None or ptx is None:
        return "it has no `compile` record, `source.cu` or `code.ptx`"
    if compile_info.get("compiler") != "nvrtc":
        return f"it was compiled by `{compile_info.get('compiler')}`"
    version = nvrtc_version()
    here = f"nvrtc {version[0]}.{version[1]}"
    if pkg.manifest.get("toolkit") != here:
        return f"it was compiled by `{pkg.manifest.get('toolkit')}`, this kernlink has `{here}`"
    name = str(compile_info.get("source") or "source.cu")
    target = str(pkg.manifest.get("target"))
    if not valid_payload_name(name) or _TARGET.fullmatch(target) is None:
        return "its recorded source name or target is not one kernlink compiles"
    refused = refused_option(compile_info.get("options", []))
    if refused is not None:  # the reader refuses such a package; never replayed, whoever reads it
        return f"it records the compile option `{refused}`, which kernlink does not replay"
    std, defines, extra = recorded_options(compile_info.get("options"))
    return Alone(
        source,
        tuple(carried_headers(pkg.payloads).items()),
        name,
        target,
        std,
        tuple(sorted(defines.items())),
        extra,
        bool(compile_info.get("cutlass")),
        layout.probe_source(layout.params_blocks(stage), stage.name),
    )


def _rebuilt(path: str, pkg: Package, alone: Alone) -> list[IntegrityFinding]:
    """The payloads the rebuild does not give again (none: the source is the code's)."""
    try:
        result, again = alone.run()
    except (DiagnosticError, UnicodeDecodeError):
        return []  # it includes files the package does not carry: bound by its lowering alone
    here = "nvrtc {}.{}".format(*nvrtc_version())
    out = []
    for payload, rebuilt in ((LTO_PAYLOAD, result.ltoir), (PTX_PAYLOAD, again.encode("utf-8"))):
        if pkg.payloads.get(payload) != rebuilt:
            facts = (
                ("payload", payload),
                ("source", SOURCE_PAYLOAD),
                ("how", here),
                ("recorded", hashlib.sha256(pkg.payloads.get(payload, b"")).hexdigest()[:16]),
                ("found", hashlib.sha256(rebuilt).hexdigest()[:16]),
            )
            out.append(IntegrityFinding(path, "not-rebuilt", facts))
    return out


def remember_pass(path: Path, stage: A.Stage, ltoir: bytes, ptx: str, alone: Alone | None) -> None:
    """Record the verdicts of a package ``kernlink pack`` just wrote, by construction, not by trust.

    Its ``code.ptx`` is nvJitLink's lowering (here) of its ``lto.ir`` and its ``captured`` facts were
    read from that PTX, so it is bound once the file read back holds exactly ``ltoir`` and ``ptx``;
    when the compile was the package's own rebuild (``alone``) and the inputs a rebuild would take
    from the file equal it, a rebuild repeats this very compile (NVRTC and nvJitLink are
    deterministic: the check itself relies on it). Anything else records nothing.
    """
    try:
        with l_integrity.worded():
            pkg = read_package(path)
    except DiagnosticError:
        return
    if pkg.payloads.get(LTO_PAYLOAD) != ltoir or pkg.payloads.get(PTX_PAYLOAD) != ptx.encode("utf-8"):
        return
    text = print_node(stage)
    _record_pass(pkg, text, "lowered")
    if alone is not None and rebuild_inputs(pkg, stage) == alone:
        _record_pass(pkg, text, "rebuilt")


# ----------------------------------------------------------------- the cache on disk

_FORMAT = "kernlink-binding/2"
_SECRET = "key"
_SECRET_BYTES = 32
_ENTRY_LIMIT = 1 << 14


def _folder() -> Path | None:
    if os.environ.get("KERNLINK_NO_BINDING_CACHE"):
        return None
    return user_cache_dir() / "binding"


def _body(pkg: Package, text: str, mode: Mode) -> dict[str, object]:
    """What a verdict was computed from: every input's hash (all of it re-checked before use)."""
    entries = pkg.manifest.get("payloads")
    payloads = {str(e["name"]): str(e["sha256"]) for e in entries} if isinstance(entries, list) else {}
    return {
        "format": _FORMAT,
        "verdict": "bound",
        "mode": mode,
        "package": pkg.sha256,
        "payloads": payloads,
        "stage": hashlib.sha256(text.encode()).hexdigest(),
        "environment": hashlib.sha256(_environment().encode()).hexdigest(),
    }


def _entry(folder: Path, body: Mapping[str, object]) -> Path:
    key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return folder / f"{key}.json"


def _mac(secret: bytes, body: Mapping[str, object]) -> str:
    return hmac.new(secret, json.dumps(body, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def _cached_pass(pkg: Package, text: str, mode: Mode) -> bool:
    """A bound verdict for exactly these inputs is on disk, written under this user's secret."""
    folder = _folder()
    secret = _secret(folder, create=False) if folder is not None else None
    if folder is None or secret is None:
        return False
    body = _body(pkg, text, mode)
    path = _entry(folder, body)
    try:
        with open_regular(path) as handle:
            raw = read_capped(handle, _ENTRY_LIMIT + 1, str(path))
        stored = json.loads(raw.decode("utf-8")) if len(raw) <= _ENTRY_LIMIT else None
    except (DiagnosticError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not isinstance(stored, dict) or not isinstance(stored.get("mac"), str):
        return False
    claimed = {k: v for k, v in stored.items() if k != "mac"}
    return claimed == body and hmac.compare_digest(str(stored["mac"]), _mac(secret, body))


def _record_pass(pkg: Package, text: str, mode: Mode) -> None:
    folder = _folder()
    if folder is None:
        return
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        secret = _secret(folder, create=True)
        if secret is None:
            return
        body = _body(pkg, text, mode)
        atomic_write_bytes(
            _entry(folder, body), json.dumps({**body, "mac": _mac(secret, body)}, sort_keys=True).encode()
        )
    except (OSError, DiagnosticError):
        pass  # the cache is an optimisation: a verdict not written is found again next time


def _secret(folder: Path, *, create: bool) -> bytes | None:
    """This user's cache secret: a regular file of 32 bytes, owned by the user, readable by no one
    else (created so when ``create``); None when there is none or it is not so (no cache then)."""
    path = folder / _SECRET
    if create and not path.exists():
        fresh = folder / f".{_SECRET}.{os.getpid()}"
        try:
            fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(_SECRET_BYTES))
            os.link(fresh, path)  # never replaces one another process made first
        except OSError:
            pass
        finally:
            fresh.unlink(missing_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        private = stat.S_ISREG(info.st_mode) and not info.st_mode & 0o077 and info.st_uid == os.geteuid()
        data = handle.read(_SECRET_BYTES + 1)
    return data if private and len(data) == _SECRET_BYTES else None


#: The modules whose code decides the verdict: a change to any of them is a new cache key.
_DECIDERS = ("packing/binding.py", "packing/layout.py", "toolchain/symbols.py", "toolchain/cuda.py")
#: The wheels whose headers, compiler and linker (the PTX lowering) the rebuild uses.
_WHEELS = (
    "nvidia-cuda-nvrtc",
    "nvidia-nvjitlink",
    "nvidia-cuda-runtime",
    "nvidia-cuda-crt",
    "nvidia-cuda-cccl",
    "nvidia-cutlass",
)


@functools.cache
def _environment() -> str:
    """The toolkit and kernlink code a verdict depends on (computed once per process)."""
    root = Path(__file__).parent.parent
    code = hashlib.sha256(b"".join((root / name).read_bytes() for name in _DECIDERS)).hexdigest()
    found = _wheel_versions()
    versions = [f"{wheel}=={found[wheel]}" if wheel in found else f"{wheel} absent" for wheel in _WHEELS]
    tools = (f"nvrtc {nvrtc_version()}", f"nvjitlink {nvjitlink_version()}")
    return "\n".join((code, *tools, *versions))


def _wheel_versions() -> dict[str, str]:
    """The installed version of each of ``_WHEELS``, from the name of its ``.dist-info`` folder.

    What ``importlib.metadata.version`` answers (the first one on ``sys.path`` wins, and an
    installer names the folder ``<name>-<version>.dist-info``) without importing it and the
    email parser it reads ``METADATA`` with: ~30 ms of every build.
    """
    wanted = {wheel.replace("-", "_").lower(): wheel for wheel in _WHEELS}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):
            stem, dot, ext = name.rpartition(".")
            project, dash, version = stem.partition("-")
            wheel = wanted.get(project.lower().replace("-", "_").replace(".", "_"))
            if dot and ext == "dist-info" and dash and wheel is not None:
                found.setdefault(wheel, version)
    return found


__all__ = [
    "Alone",
    "Verdict",
    "decide",
    "forget",
    "lower",
    "rebuild_inputs",
    "rebuild_problems",
    "refuse_unbound",
    "remember_pass",
]
