"""`kernlink pack`: compile a component to LTO IR and package it with its contract."""

from __future__ import annotations

import argparse
import dataclasses
import json

from diagnostics.model import Diagnostic, DiagnosticError, Severity
from diagnostics.sources import SourceMap
from kernlink.exit_codes import EXIT_OK
from kernlink.output import color, diagnostics_json, emit, report


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kernlink.paths import output_path

    p = sub.add_parser("pack", help="compile a component to LTO IR and package it with its contract")
    p.add_argument("source", help="the component's CUDA source (.cu)")
    p.add_argument("--contract", required=True, help="its contract (.kc)")
    p.add_argument(
        "-o", "--output", type=output_path, help="the package to write (default: build/<stem>.kpkg beside the source)"
    )
    p.add_argument(
        "--compiler", choices=("nvrtc", "nvcc"), default="nvrtc", help="NVRTC from PyPI (default) or the nvcc on PATH"
    )
    p.add_argument("--stage", help="the stage to pack when the contract holds several")
    p.add_argument(
        "--strict",
        action="store_true",
        help="a conformance finding or an undecided code site is an error: no package is written",
    )
    p.add_argument(
        "-I",
        "--include",
        action="append",
        default=[],
        metavar="DIR",
        help="another folder of headers (the CUDA headers from PyPI are always found)",
    )
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME[=VALUE]", help="a macro")
    p.add_argument("--std", default="c++17", choices=("c++17", "c++20"), help="the C++ dialect")
    p.add_argument(
        "--cutlass", action="store_true", help="compile with the CUTLASS/CuTe headers of the nvidia-cutlass wheel"
    )
    p.add_argument(
        "--no-source",
        action="store_true",
        help="a binary-only package: LTO IR, PTX and manifest, no source (no one-unit control)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_pack)


def cmd_pack(args: argparse.Namespace) -> int:
    from pathlib import Path

    from packing.pack import CompileFlags, pack

    sources = _sources(args.source, args.contract)
    own = _fragments(args)
    if args.strict and any(d.is_error for d in own):
        return report([d for d in own if d.is_error], sources, args)
    defines = tuple((d.partition("=")[0], d.partition("=")[2] or "1") for d in args.define)
    flags = CompileFlags(
        tuple(Path(d).resolve() for d in args.include), defines, args.std, args.cutlass, not args.no_source
    )
    try:
        result = pack(
            args.source,
            args.contract,
            args.output,
            compiler=args.compiler,
            stage=args.stage,
            strict=args.strict,
            flags=flags,
        )
    except DiagnosticError as err:
        return report(err.diagnostics, sources, args)
    if own:
        result = dataclasses.replace(result, warnings=(*own, *result.warnings))
    if args.format == "json":
        print(
            json.dumps(
                {
                    "package": str(result.path),
                    "stage": result.stage.name,
                    "version": result.stage.version,
                    "target": result.target,
                    "toolkit": result.toolkit,
                    "size": result.size,
                    "sha256": result.sha256,
                    "defined": sorted(result.captured.defined_symbols),
                    "needed": sorted(result.captured.needed_symbols),
                    "warnings": json.loads(diagnostics_json(result.warnings))["diagnostics"],
                    "seconds": dict(result.seconds),
                },
                indent=2,
                sort_keys=True,
            )
        )
        return EXIT_OK
    if result.warnings:
        emit(result.warnings, sources, "text", color=color(args.color))
    from diagnostics.escape import escape_controls

    print(
        escape_controls(
            f"packed `{result.stage.name}` {result.stage.version} for {result.target} with {result.toolkit} "
            f"-> {result.path} ({result.size} bytes)"
        )
    )
    for role, what in result.deferred:
        print(
            escape_controls(
                f"note: role `{role}` calls other stages' callables, which may run steps of {what}: those "
                "steps are checked with the composition (`kernlink check`), through the callables' summaries"
            )
        )
    for role, barrier, counter in result.deferred_orders:
        print(
            escape_controls(
                f"note: role `{role}` calls other stages' callables, which may access global memory or step counter "
                f"`{counter}`: what barrier `{barrier}` orders around the counter is checked with the composition "
                "(`kernlink check`), through the callables' summaries"
            )
        )
    return EXIT_OK


def _fragments(args: argparse.Namespace) -> list[Diagnostic]:
    """The register fragments of the stage packed, each checked on its own side
    (transfer_model.fragments.check_alone): what an owner can learn before composing. Warnings, as
    pack's other findings about the contract; under ``--strict`` errors, and no package is written.
    A contract that does not read is pack's to report."""
    from contract_lang import ast as A
    from packing.pack import choose_stage

    try:
        stage = choose_stage(args.contract, args.stage)
    except (DiagnosticError, OSError):
        return []
    if not any(isinstance(i, A.Fragment) for i in stage.items):
        return []
    from transfer_model.fragments import check_stage

    found = check_stage(stage, args.contract)
    if args.strict:
        return found
    return [dataclasses.replace(d, severity=Severity.WARNING) if d.is_error else d for d in found]


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
