"""`kernlink audit DIR`: re-run the link audit (linker/audit.py) on a link's output directory.

Reads ``link.json``, ``kernel.cubin`` and ``kernel.ptx`` from DIR and proves that the
constants in the linked code are the map's. Exit 0 when every check holds, 1 when one
does not (or, with ``--strict``, when a site cannot be proved), 2 when DIR lacks a file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from checker.clauses import l_link
from diagnostics.escape import escape_controls
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code

FILES = ("link.json", "kernel.cubin", "kernel.ptx")


def register(sub: Any) -> None:
    p = sub.add_parser("audit", help="prove that the constants in a linked kernel are its link map's")
    p.add_argument("directory", help="a `kernlink link` output directory")
    p.add_argument("--strict", action="store_true", help="a site the audit cannot prove is an error")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_audit)


def _read(root: Path) -> tuple[dict[str, Any], bytes, str]:
    missing = [n for n in FILES if not (root / n).is_file()]
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
    try:
        record = json.loads((root / "link.json").read_text(encoding="utf-8"))
        cubin = (root / "kernel.cubin").read_bytes()
        ptx = (root / "kernel.ptx").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise DiagnosticError([Diagnostic(Code.E_IO, f"cannot read the link output in `{root}`: {err}")]) from err
    if not isinstance(record, dict):
        raise DiagnosticError([l_link.not_a_record(str(root / "link.json"))])
    if record.get("status") != "linked":
        raise DiagnosticError([l_link.not_linked(str(root), str(record.get("status")))])
    return record, cubin, ptx


def cmd_audit(args: argparse.Namespace) -> int:
    from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED, EXIT_USAGE
    from kernlink.output import emit
    from linker.audit import audit

    root = Path(args.directory)
    ptx_name = str(root / "kernel.ptx")
    sources = SourceMap()
    try:
        record, cubin, ptx = _read(root)
    except DiagnosticError as err:
        emit(err.diagnostics, sources, args.format, color=None)
        return EXIT_USAGE if any(d.code == Code.E_IO for d in err.diagnostics) else EXIT_REJECTED
    sources.add(ptx_name, ptx)
    result = audit(record, cubin, ptx, ptx_name=ptx_name, map_name=str(root / "link.json"), strict=args.strict)
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
        print(escape_controls(f"audited `{root}`: {'; '.join(result.proved)} agree with the map"))
    return EXIT_OK
