"""`kernlink build PIPELINE.kp -o DIR`: pack the components that changed, then link, in one process."""

from __future__ import annotations

import argparse
import sys

from diagnostics.symbols import Code


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("build", help="pack every component whose source, contract or toolkit changed, then link")
    p.add_argument(
        "pipeline",
        help='the pipeline (.kp); its `use … from "build/<stem>.kpkg"` lines name the '
        "packages, built from <stem>.cu and <stem>.kc beside build/",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the link's output directory")
    p.add_argument("--compiler", choices=("nvrtc", "nvcc"), default="nvrtc")
    p.add_argument("--target", help="link for another target than the pipeline's")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_build)


def cmd_build(args: argparse.Namespace) -> int:
    from diagnostics.sources import SourceMap
    from kernlink.build import build, summary
    from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED, EXIT_USAGE
    from kernlink.output import emit

    if not args.output:
        print("error: -o needs a directory name", file=sys.stderr)
        return EXIT_USAGE
    result, linked = build(args.pipeline, args.output, compiler=args.compiler, target=args.target)
    if result.steps:
        print(summary(result.steps))
    color = {"always": True, "never": False}.get(args.color)
    if result.diagnostics:
        emit(result.diagnostics, linked.sources if linked is not None else SourceMap(), "text", color=color)
    if not result.ok:
        return EXIT_USAGE if any(d.code == Code.E_IO for d in result.diagnostics) else EXIT_REJECTED
    print(f"built `{args.pipeline}` -> {args.output}/kernel.cubin")
    return EXIT_OK
