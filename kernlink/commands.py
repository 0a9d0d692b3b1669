"""Subcommands that build, read and run artifacts: ``pack``, ``inspect``, ``link`` and ``run``.

``kernlink.cli.build_parser`` calls :func:`add_commands`; each command returns an
exit code (kernlink/exit_codes.py: 0 done, 1 rejected, 2 usage or I/O error, 3 internal error) and reports problems as
diagnostics, never as tracebacks.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.sources import SourceMap


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], only: str | None = None) -> None:
    """Register this module's subcommands on the CLI's subparsers (only ``only``, when given)."""
    from kernlink.paths import output_path

    def want(verb: str) -> bool:
        return only is None or only == verb

    if want("pack"):
        p = sub.add_parser("pack", help="compile a component to LTO IR and package it with its contract")
        p.add_argument("source", help="the component's CUDA source (.cu)")
        p.add_argument("--contract", required=True, help="its contract (.kc)")
        p.add_argument("-o", "--output", type=output_path,
                       help="the package to write (default: build/<stem>.kpkg beside the source)")
        p.add_argument("--compiler", choices=("nvrtc", "nvcc"), default="nvrtc",
                       help="NVRTC from PyPI (default) or the nvcc on PATH")
        p.add_argument("--stage", help="the stage to pack when the contract holds several")
        p.add_argument("--strict", action="store_true",
                       help="a conformance finding or an undecided code site is an error: no package is written")
        p.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                       help="another folder of headers (the CUDA headers from PyPI are always found)")
        p.add_argument("-D", "--define", action="append", default=[], metavar="NAME[=VALUE]", help="a macro")
        p.add_argument("--std", default="c++17", choices=("c++17", "c++20"), help="the C++ dialect")
        p.add_argument("--cutlass", action="store_true",
                       help="compile with the CUTLASS/CuTe headers of the nvidia-cutlass wheel")
        p.add_argument("--no-source", action="store_true",
                       help="a binary-only package: LTO IR, PTX and manifest, no source (no one-unit control)")
        p.add_argument("--format", choices=("text", "json"), default="text")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
        p.set_defaults(run=cmd_pack)

    if want("inspect"):
        p = sub.add_parser("inspect", help="show a package: manifest, captured symbols and layouts, payloads")
        p.add_argument("package", help="a .kpkg file")
        p.add_argument("--format", choices=("text", "json"), default="text")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
        p.set_defaults(run=cmd_inspect)

    if want("link"):
        p = sub.add_parser("link", help="check, generate and device-link a pipeline into one cubin with a link map")
        p.add_argument("paths", nargs="+", help="a pipeline (.kp) whose stages come from packages")
        p.add_argument("-o", "--output", required=True, metavar="DIR", type=output_path,
                       help="the directory for kernel.cubin, generated.cu, link.map and link.json")
        p.add_argument("--target", help="link for another target than the pipeline's")
        p.add_argument("--ptx", action="store_true", help="also write the linked PTX (kernel.ptx)")
        p.add_argument("--strict", action="store_true",
                       help="a `.kc` that differs from its package's contract is an error")
        from linker.watchdog import add_watchdog_argument

        add_watchdog_argument(p)
        p.add_argument("--format", choices=("text", "json"), default="text", help="how to print diagnostics")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
        p.set_defaults(run=cmd_link)

    if want("run"):
        from kernlink.run import add_parser as add_run

        add_run(sub)

    if want("place"):
        p = sub.add_parser("place", help="place every claim of an accepted composition and print the map")
        p.add_argument("paths", nargs="+", help="a pipeline (.kp) and optionally contracts or packages")
        p.add_argument("--target", help="place for another target (sm_90a, sm_100a, sm_120a)")
        p.add_argument("--format", choices=("text", "json"), default="text", help="the map on stdout")
        p.add_argument("--json", dest="json_out", metavar="FILE", type=output_path, help="also write the map as JSON")
        p.add_argument("--svg", metavar="FILE", type=output_path, help="also draw shared memory and warps as SVG")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
        p.set_defaults(run=cmd_place)

    if want("fuzz"):
        from kernlink.fuzz import add_parser as add_fuzz

        add_fuzz(sub)

    if want("parity"):
        from kernlink.cmd_parity import register as add_parity

        add_parity(sub)

    if want("header"):
        from kernlink.cmd_header import register as add_header

        add_header(sub)

    if want("build"):
        from kernlink.cmd_build import register as add_build

        add_build(sub)

    if want("lsp"):
        from kernlink.cmd_lsp import register as add_lsp

        add_lsp(sub)


# ----------------------------------------------------------------- link

def cmd_link(args: argparse.Namespace) -> int:
    from kernlink.api import link
    from kernlink.cli import EXIT_OK, emit

    result = link(args.paths, args.output, target=args.target, emit_ptx=args.ptx, strict=args.strict,
                  watchdog=args.watchdog)
    if not result.ok:
        return _report(result.diagnostics, result.sources, args)
    if args.format == "json":
        sys.stdout.write(_json(result.diagnostics) + "\n")
        return EXIT_OK
    if result.diagnostics:
        emit(result.diagnostics, result.sources, "text", color=_color(args.color))
    assert result.output is not None and result.output.cubin is not None
    from diagnostics.render_text import escape_controls

    record, size = result.output.record, len(result.output.cubin)
    print(escape_controls(f"linked `{record.pipeline}` for {record.target} -> {args.output}/kernel.cubin "
                          f"({size} bytes); map in {args.output}/link.map"))
    return EXIT_OK


# ----------------------------------------------------------------- place

def cmd_place(args: argparse.Namespace) -> int:
    """Check, then place; the map is written only for an accepted composition."""
    from diagnostics.files import atomic_write_text
    from kernlink.api import check
    from kernlink.cli import EXIT_OK, EXIT_REJECTED, emit
    from kernlink.exit_codes import exit_for
    from placement import render_map, render_svg, to_json

    result = check(args.paths, target=args.target)
    placed = result.downstream.placed if result.downstream is not None else None
    if not result.accepted or placed is None:
        emit(result.diagnostics, result.sources, "text", color=_color(args.color), summary="composition rejected")
        return exit_for(result.diagnostics) or EXIT_REJECTED
    text_map, json_map = render_map(placed.placement), to_json(placed.placement)
    if args.json_out:
        atomic_write_text(args.json_out, json_map)
    if args.svg:
        atomic_write_text(args.svg, render_svg(placed.placement))
    from diagnostics.render_text import escape_controls

    sys.stdout.write(json_map if args.format == "json" else escape_controls(text_map))
    return EXIT_OK


# ----------------------------------------------------------------- pack

def cmd_pack(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kernlink.cli import EXIT_OK, emit
    from linker.pack import CompileFlags, pack

    sources = _sources(args.source, args.contract)
    defines = tuple((d.partition("=")[0], d.partition("=")[2] or "1") for d in args.define)
    flags = CompileFlags(tuple(Path(d).resolve() for d in args.include), defines, args.std, args.cutlass,
                         not args.no_source)
    try:
        result = pack(args.source, args.contract, args.output, compiler=args.compiler, stage=args.stage,
                      strict=args.strict, flags=flags)
    except DiagnosticError as err:
        return _report(err.diagnostics, sources, args)
    if args.format == "json":
        print(json.dumps({
            "package": str(result.path), "stage": result.stage.name, "version": result.stage.version,
            "target": result.target, "toolkit": result.toolkit, "size": result.size, "sha256": result.sha256,
            "defined": sorted(result.captured.defined_symbols), "needed": sorted(result.captured.needed_symbols),
            "warnings": json.loads(_json(result.warnings))["diagnostics"], "seconds": dict(result.seconds)},
            indent=2, sort_keys=True))
        return EXIT_OK
    if result.warnings:
        emit(result.warnings, sources, "text", color=_color(args.color))
    print(f"packed `{result.stage.name}` {result.stage.version} for {result.target} with {result.toolkit} "
          f"-> {result.path} ({result.size} bytes)")
    return EXIT_OK


# ----------------------------------------------------------------- inspect

def cmd_inspect(args: argparse.Namespace) -> int:
    from package.kpkg import read_package
    from package.manifest import stage_package

    try:  # one bounded read; the manifest is validated before the view uses it
        raw = read_package(args.package)
        stage = stage_package(raw, args.package)
        view = inspect_view(args.package, stage.manifest, raw.manifest_sha256)
    except DiagnosticError as err:
        return _report(err.diagnostics, SourceMap(), args)
    if args.format == "json":
        print(json.dumps(view, indent=2, sort_keys=True))
    else:
        _inspect_text(view, color=_color(args.color))
    return 0


def inspect_view(path: str, manifest: Mapping[str, Any], manifest_sha256: str) -> dict[str, Any]:
    """What ``inspect`` shows, as plain data: the manifest, classified symbols, payloads."""
    from contract_lang.parser import parse_text
    from linker.handles import call_symbols, required_definitions, resolve_handles
    from linker.pack import prototypes_of

    captured = manifest["captured"]
    protos = prototypes_of(manifest)
    stage = parse_text(manifest["contract"], f"{path}!contract.kc", "contract").stages[0]
    handles = resolve_handles(stage, captured["needed"])
    calls = call_symbols(stage)
    required = required_definitions(stage)

    def role(symbol: str, needed: bool) -> str:
        if needed:
            if symbol in calls:
                return f"call `{calls[symbol].name}`"
            spec = handles.get(symbol)
            return f"handle {spec.kind} of `{spec.item}`" if spec else "unexplained"
        what = required.get(symbol)
        return f"{what[0]} of `{getattr(what[1], 'name', '')}`" if what else "other"

    symbols = [{"symbol": s, "direction": d, "prototype": str(protos[s]) if s in protos else "",
                "meaning": role(s, d == "needed")}
               for d in ("defined", "needed") for s in captured["needed" if d == "needed" else "defined"]]
    fields = {k: manifest[k] for k in ("stage", "version", "target", "toolkit", "format", "format_version")}
    payload_names = {p.get("name") for p in manifest["payloads"] if isinstance(p, Mapping)}
    return {"package": path, "manifest": fields, "manifest_sha256": manifest_sha256,
            "compile": manifest.get("compile", {}), "contract": manifest["contract"], "symbols": symbols,
            "params": captured["params"], "payloads": list(manifest["payloads"]),
            "binary_only": "source.cu" not in payload_names}


def _inspect_text(view: Mapping[str, Any], *, color: bool | None) -> None:
    from rich.console import Console
    from rich.table import Table

    view = _escaped(view)  # a crafted manifest must not drive the terminal
    console = Console(force_terminal=color, no_color=color is False, highlight=False)
    if not console.is_terminal:
        console = Console(force_terminal=color, no_color=color is False, highlight=False, width=120)
    head = Table(title=f"package {view['package']}", show_header=False, title_justify="left")
    head.add_column(style="bold")
    head.add_column()
    for key, value in view["manifest"].items():
        head.add_row(key, str(value))
    head.add_row("manifest sha256", view["manifest_sha256"])
    compile_info = view["compile"]
    if compile_info:
        head.add_row("compiler", f"{compile_info.get('compiler', '')} {' '.join(compile_info.get('options', []))}")
        head.add_row("source", str(compile_info.get("source", "")) + (
            "  (binary-only: the source is not in the package)" if view.get("binary_only") else ""))
    console.print(head)

    symbols = Table(title="captured symbols", title_justify="left")
    for column in ("symbol", "", "prototype", "meaning"):
        symbols.add_column(column, no_wrap=column == "symbol", overflow="fold")
    for row in view["symbols"]:
        symbols.add_row(row["symbol"], row["direction"], row["prototype"], row["meaning"])
    console.print(symbols)

    for params in view["params"]:
        console.print(f"params {params['name']}: size {params['size']}, align {params['align']}")
        table = Table()
        for column in ("field", "offset", "size"):
            table.add_column(column, justify="left" if column == "field" else "right")
        for name, offset, size in params["fields"]:
            table.add_row(name, str(offset), str(size))
        console.print(table)

    payloads = Table(title="payloads", title_justify="left")
    for column in ("name", "size", "sha256"):
        payloads.add_column(column, justify="right" if column == "size" else "left")
    for entry in view["payloads"]:
        payloads.add_row(entry["name"], str(entry["size"]), entry["sha256"])
    console.print(payloads)
    console.print("contract:", style="bold")
    console.print(view["contract"].rstrip("\n"), markup=False)


# ----------------------------------------------------------------- helpers

def _escaped(value: Any) -> Any:
    """Every string of a view with its control characters escaped, for text output."""
    from diagnostics.render_text import escape_controls

    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, Mapping):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escaped(v) for v in value]
    return value


def _sources(*paths: str) -> SourceMap:
    """The inputs' text, so diagnostics can quote them; unreadable files are left out."""
    from diagnostics.files import read_source

    sources = SourceMap()
    for path in paths:
        try:
            sources.add(path, read_source(path))
        except DiagnosticError:
            continue
    return sources


def _report(diags: Sequence[Diagnostic], sources: SourceMap, args: argparse.Namespace) -> int:
    """Print a failed command's diagnostics; 3 for internal errors, 2 for I/O errors, else 1."""
    from kernlink.cli import EXIT_REJECTED, emit
    from kernlink.exit_codes import exit_for

    if args.format == "json":
        sys.stdout.write(_json(diags) + "\n")
    else:
        emit(diags, sources, "text", color=_color(args.color))
    return exit_for(diags) or EXIT_REJECTED


def _json(diags: Sequence[Diagnostic]) -> str:
    from diagnostics.render_json import render_json
    from kernlink import __version__

    return render_json(diags, tool_version=__version__)


def _color(choice: str) -> bool | None:
    return {"always": True, "never": False}.get(choice)
