"""`kernlink draft`: a contract skeleton drafted from a component's compiled code.

The source is compiled as `kernlink pack` compiles it (NVRTC to LTO IR, lowered to PTX by
nvJitLink, with ``-lineinfo``), and once more with ``-G`` for the params structs' layouts
(linker/debuginfo.py); analysis/draft reads both and prints the contract. Flags come from
``<stem>.flags`` beside the source, as for `kernlink build`, then the command line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code
from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED
from kernlink.output import report

if TYPE_CHECKING:
    from analysis.draft import Draft, Tally


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("draft", help="draft a contract from a component's compiled code")
    p.add_argument("source", help="the component's CUDA source (.cu)")
    p.add_argument("-o", "--output", help="write the drafted contract here (default: print it)")
    p.add_argument("--ptx", help="write the PTX the draft's `code.ptx:LINE` comments refer to")
    p.add_argument("--target", default="sm_90a", help="the architecture to compile for (default sm_90a)")
    p.add_argument(
        "--compiler", choices=("nvrtc", "nvcc"), default="nvrtc", help="NVRTC from PyPI (default) or the nvcc on PATH"
    )
    p.add_argument("--stage", help="the stage's name (else drafted from the handles, undecided)")
    p.add_argument("--version", dest="stage_version", help="the stage's version (else undecided)")
    p.add_argument("-I", "--include", action="append", default=[], metavar="DIR", help="another folder of headers")
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME[=VALUE]", help="a macro")
    p.add_argument("--std", default=None, choices=("c++17", "c++20"), help="the C++ dialect")
    p.add_argument("--cutlass", action="store_true", help="compile with the CUTLASS/CuTe headers")
    p.add_argument(
        "--against",
        metavar="CONTRACT.kc",
        help="compare with a hand-written contract: each value it states agreed, disagreed or undecided "
        "(exit 1 when the draft disagrees with one)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="with --against: the tally's format")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_draft)


def cmd_draft(args: argparse.Namespace) -> int:
    from analysis.draft import render
    from diagnostics.files import atomic_write_text

    sources = SourceMap()
    try:
        drafted, ptx = build_draft(args, sources)
        text = render(drafted)
        if args.ptx:
            atomic_write_text(args.ptx, ptx)
        if args.output:
            atomic_write_text(args.output, text)
        elif not args.against:
            print(text, end="")
        if args.against:
            return _against(args, drafted, sources)
    except DiagnosticError as err:
        return report(err.diagnostics, sources, args)
    return EXIT_OK


def build_draft(args: argparse.Namespace, sources: SourceMap) -> tuple[Draft, str]:
    """Compile ``args.source`` and draft its contract (raises ``DiagnosticError`` on a bad input)."""
    from analysis.draft import draft
    from diagnostics.files import read_source
    from kernlink.builder.flags import flags_path, read_flags
    from linker import debuginfo
    from package.codefacts.ptx import declarations
    from packing.pack import CompileFlags
    from toolchain.cuda import stable_cwd
    from toolchain.symbols import LTO_PTX_EXTRA, compile_lto_and_ptx, compile_ptx

    source = Path(args.source)
    text = read_source(source, display=str(source))
    sources.add(str(source), text)
    flags = read_flags(flags_path(source), sources) or CompileFlags()
    include = [*flags.dirs(source.parent.resolve()), *(Path(d).resolve() for d in args.include)]
    if args.cutlass and not flags.cutlass:
        include += CompileFlags(cutlass=True).dirs(source.parent.resolve())[1:]
    defines = dict(flags.defines) | {d.partition("=")[0]: d.partition("=")[2] or "1" for d in args.define}
    std = args.std or flags.std
    extra = ("-default-device",) if args.cutlass or flags.cutlass else ()
    name = source.name
    compiler = getattr(args, "compiler", "nvrtc")
    with stable_cwd():
        if compiler == "nvcc":
            lowered = compile_ptx(
                text.encode(),
                name,
                arch=args.target,
                compiler="nvcc",
                include_dirs=include,
                defines=defines,
                std=std,
                extra_options=("-lineinfo",),
            )
            cubin = debuginfo.debug_cubin_nvcc(
                text.encode(), name, arch=args.target, include_dirs=[str(d) for d in include], defines=defines, std=std
            )
        else:
            _, ptx = compile_lto_and_ptx(
                text.encode(),
                name,
                arch=args.target,
                std=std,
                include_dirs=include,
                defines=defines,
                extra_options=(*extra, *LTO_PTX_EXTRA),
            )
            if not isinstance(ptx, str):
                raise DiagnosticError(
                    [Diagnostic(Code.E_PACK, f"nvJitLink could not lower the LTO IR of `{source}` to PTX")]
                )
            lowered = ptx
            cubin = debuginfo.debug_cubin(
                text.encode(),
                name,
                arch=args.target,
                include_dirs=[str(d) for d in include],
                defines=defines,
                std=std,
                extra=extra,
            )
    entries = [d.name for d in declarations(lowered) if d.linkage in (".visible", ".weak")]
    layouts = debuginfo.layouts(cubin, entries)
    drafted = draft(lowered, layouts=layouts, name=args.stage, version=args.stage_version, fallback_name=source.stem)
    return drafted, lowered


def _against(args: argparse.Namespace, drafted: Draft, sources: SourceMap) -> int:
    from analysis.draft import tally
    from contract_lang.parser import parse_file

    parsed, text = parse_file(args.against, "contract", display=args.against)
    sources.add(args.against, text)
    stage = next((s for s in parsed.stages if args.stage is None or s.name == args.stage), None)
    if stage is None:
        raise DiagnosticError([Diagnostic(Code.E_PACK, f"`{args.against}` holds no stage to compare with")])
    result = tally(stage, drafted)
    if args.format == "json":
        print(json.dumps(_tally_json(args.source, stage.name, result), indent=2, sort_keys=True))
    else:
        print(
            f"{args.source}: {result.stated} values stated, {len(result.agreed)} drafted identically "
            f"({100 * result.agreement:.0f}%), {len(result.disagreed)} disagree, {len(result.undecided)} undecided"
        )
        for key, hand, said in result.disagreed:
            print(f"  disagrees: {' / '.join(key)}: the contract says `{hand}`, the draft `{said}`")
    return EXIT_REJECTED if result.disagreed else EXIT_OK


def _tally_json(source: str, stage: str, result: Tally) -> dict[str, object]:
    return {
        "source": source,
        "stage": stage,
        "stated": result.stated,
        "agreed": len(result.agreed),
        "disagreed": [{"key": list(k), "contract": h, "draft": d} for k, h, d in result.disagreed],
        "undecided": [list(k) for k in result.undecided],
        "extra": result.extra,
    }
