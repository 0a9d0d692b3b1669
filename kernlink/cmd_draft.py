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

from diagnostics.model import Diagnostic, DiagnosticError, Severity
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code
from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED
from kernlink.output import report

if TYPE_CHECKING:
    from analysis.draft import Composition, Draft, Tally


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("draft", help="draft a contract from a component's compiled code")
    p.add_argument(
        "source", help="the component's CUDA source (.cu), or a pipeline (.kp): each component it uses, composed"
    )
    p.add_argument(
        "--pipeline",
        metavar="P.kp",
        help="draft the component as a stage of this pipeline: what the pipeline and its other stages decide "
        "(name, launch, facts, rendezvous, tensor connections) is drafted, each with a `composed` comment",
    )
    p.add_argument("-o", "--output", help="write the drafted contract here (default: print it)")
    p.add_argument("--ptx", help="write the PTX the draft's `code.ptx:LINE` comments refer to")
    p.add_argument(
        "--target", default=None, help="the architecture to compile for (default: the pipeline's target, else sm_90a)"
    )
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
        if Path(args.source).suffix == ".kp":
            return _pipeline(args, sources)
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


def _pipeline(args: argparse.Namespace, sources: SourceMap) -> int:
    """``kernlink draft P.kp``: the draft of each component the pipeline uses whose source is beside it."""
    from analysis.draft import render
    from diagnostics.files import atomic_write_text

    if args.against or args.pipeline or args.ptx:
        raise DiagnosticError(
            [Diagnostic(Code.E_PACK, "`--against`, `--pipeline` and `--ptx` draft one component: give its `.cu`")]
        )
    pipeline = Path(args.source)
    composition = load_composition(pipeline, sources)
    texts: list[str] = []
    for use in composition.pipeline.uses:
        stem = Path(use.path).stem if use.path else None
        source = pipeline.parent / f"{stem}.cu" if stem else None
        if source is None or not source.is_file():
            where = f"`{source}`" if source else "a package path"
            texts.append(f"# stage `{use.stage}`: not drafted, its `use` names no source ({where} is missing)\n")
            continue
        one = argparse.Namespace(**{**vars(args), "source": str(source), "pipeline": str(pipeline)})
        drafted, _ = build_draft(one, sources, composition)
        texts.append(render(drafted))
    text = "\n".join(texts)
    if args.output:
        atomic_write_text(args.output, text)
    else:
        print(text, end="")
    return EXIT_OK


def load_composition(pipeline: Path, sources: SourceMap) -> Composition:
    """The pipeline and the stages its ``use`` lines select (packages, else the contracts beside it)."""
    from analysis.draft import Composition
    from checker.resolve import select_stages
    from package.loader import UsageError, load

    try:
        inputs = load([pipeline])
    except UsageError as err:
        raise DiagnosticError([Diagnostic(Code.E_PACK, str(err))]) from err
    sources.texts.update(inputs.sources.texts)
    errors = [d for d in inputs.diagnostics if d.severity is Severity.ERROR]
    if errors:
        raise DiagnosticError(errors)
    if inputs.pipeline is None:
        raise DiagnosticError([Diagnostic(Code.E_PACK, f"`{pipeline}` holds no pipeline")])
    chosen, _ = select_stages(inputs.pipeline, inputs.candidates, inputs.unparsable)
    return Composition(inputs.pipeline, tuple(c.stage for c in chosen))


def build_draft(
    args: argparse.Namespace, sources: SourceMap, composition: Composition | None = None
) -> tuple[Draft, str]:
    """Compile ``args.source`` and draft its contract, composed into ``args.pipeline`` when given (raises
    ``DiagnosticError`` on a bad input)."""
    from analysis.draft import draft
    from diagnostics.files import read_source
    from kernlink.builder.flags import flags_path, read_flags
    from linker import debuginfo
    from package.codefacts.ptx import declarations
    from packing.pack import CompileFlags
    from toolchain.cuda import stable_cwd
    from toolchain.symbols import LTO_PTX_EXTRA, compile_lto_and_ptx, compile_ptx

    if composition is None and getattr(args, "pipeline", None):
        composition = load_composition(Path(args.pipeline), sources)
    stated = composition.pipeline.target if composition is not None else None
    arch = args.target or (stated.name if stated is not None else "sm_90a")
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
                arch=arch,
                compiler="nvcc",
                include_dirs=include,
                defines=defines,
                std=std,
                extra_options=("-lineinfo",),
            )
            cubin = debuginfo.debug_cubin_nvcc(
                text.encode(), name, arch=arch, include_dirs=[str(d) for d in include], defines=defines, std=std
            )
        else:
            _, ptx = compile_lto_and_ptx(
                text.encode(),
                name,
                arch=arch,
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
                arch=arch,
                include_dirs=[str(d) for d in include],
                defines=defines,
                std=std,
                extra=extra,
            )
    entries = [d.name for d in declarations(lowered) if d.linkage in (".visible", ".weak")]
    layouts = debuginfo.layouts(cubin, entries)
    drafted = draft(
        lowered,
        layouts=layouts,
        name=args.stage,
        version=args.stage_version,
        fallback_name=source.stem,
        composition=composition,
    )
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
