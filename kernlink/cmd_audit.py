"""`kernlink audit DIR`: re-run the link audit (linker/audit.py) on a link's output directory.

Reads ``link.json``, ``kernel.cubin``, ``kernel.ptx`` and ``kernel.h`` from DIR (each a regular
file, read within a size limit) and proves that what the linked code does with the kernel's
resources is what the map placed, and that ``kernel.h`` writes the map's params. Exit 0 when
every check holds, 1 when one does not (or, with ``--strict``, when a site cannot be proved; a
``link.json`` that is not a link record is rejected the same way), 2 when DIR lacks a file or
one cannot be read. Diagnostics name the files as DIR was given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from diagnostics.escape import escape_controls
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code

FILES = ("link.json", "kernel.cubin", "kernel.ptx")
HEADER = "kernel.h"
#: Size limits (bytes) of what the audit reads: a record and the linked code, far above any link's.
LIMITS = {"link.json": 64 << 20, "kernel.cubin": 256 << 20, "kernel.ptx": 256 << 20, HEADER: 512 << 20}


def register(sub: Any) -> None:
    p = sub.add_parser("audit", help="prove that a linked kernel uses its resources as its link map placed them")
    p.add_argument("directory", help="a `kernlink link` output directory")
    p.add_argument("--strict", action="store_true", help="a site the audit cannot prove is an error")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_audit)


def _bytes(root: Path, name: str) -> bytes:
    from diagnostics.files import open_regular, read_capped

    path = root / name
    with open_regular(path, display=str(path)) as handle:
        data = read_capped(handle, LIMITS[name] + 1, str(path))
    if len(data) > LIMITS[name]:
        raise DiagnosticError(
            [Diagnostic(Code.E_TOO_LARGE, f"`{path}` is over the audit's limit of {LIMITS[name]} bytes")]
        )
    return data


def _text(root: Path, name: str) -> str:
    try:
        return _bytes(root, name).decode("utf-8")
    except UnicodeDecodeError as err:
        path = root / name
        raise DiagnosticError([Diagnostic(Code.E_ENCODING, f"`{path}` is not UTF-8 text (byte {err.start})")]) from err


def _read(root: Path) -> tuple[dict[str, Any], bytes, str, tuple[str, str | None]]:
    from checker.clauses import l_link
    from linker.audit import decode_record

    missing = [n for n in FILES if not (root / n).exists()]
    if missing:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_IO,
                    f"`{root}` has no {', '.join(f'`{m}`' for m in missing)}",
                    helps=("audit the directory `kernlink link -o DIR` wrote",),
                )
            ]
        )
    record = decode_record(_bytes(root, "link.json"), str(root / "link.json"))
    if isinstance(record, Diagnostic):
        raise DiagnosticError([record])
    if record.get("status") != "linked":
        raise DiagnosticError([l_link.not_linked(str(root), str(record.get("status"))[:64])])
    cubin, ptx = _bytes(root, "kernel.cubin"), _text(root, "kernel.ptx")
    header = _text(root, HEADER) if (root / HEADER).exists() else None
    return record, cubin, ptx, (str(root / HEADER), header)


def cmd_audit(args: argparse.Namespace) -> int:
    from checker.clauses.l_link import AUDIT_PROVED
    from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, exit_for
    from kernlink.output import emit
    from linker.audit import audit

    root = Path(args.directory)
    ptx_name = str(root / "kernel.ptx")
    sources = SourceMap()
    try:
        record, cubin, ptx, header = _read(root)
    except DiagnosticError as err:
        emit(err.diagnostics, sources, args.format, color=None)
        usage = any(d.code in (Code.E_IO, Code.E_TOO_LARGE, Code.E_ENCODING) for d in err.diagnostics)
        return EXIT_USAGE if usage else exit_for(err.diagnostics) or EXIT_REJECTED
    sources.add(ptx_name, ptx)
    if header[1] is not None:
        sources.add(header[0], header[1])
    result = audit(
        record, cubin, ptx, ptx_name=ptx_name, map_name=str(root / "link.json"), strict=args.strict, header=header
    )
    color = {"always": True, "never": False}.get(args.color)
    if args.format == "json":
        emit(result.diagnostics, sources, "json", color=None)
    elif result.diagnostics:
        emit(result.diagnostics, sources, "text", color=color)
    if not result.ok:
        if args.format == "text":
            print(escape_controls(f"audit failed: `{root}`'s linked code disagrees with its map"), file=sys.stderr)
        return EXIT_REJECTED
    if args.format == "text":
        said = "; ".join(AUDIT_PROVED[key] for key in result.proved)
        print(escape_controls(f"audited `{root}`: {said} agree with the map"))
    return EXIT_OK
