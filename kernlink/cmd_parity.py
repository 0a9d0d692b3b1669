"""`kernlink parity PIPELINE.kp -o DIR`: prove a link free against the same sources built as one unit.

Steps (specs/parity.md):

1. check and link the pipeline as `kernlink link --ptx` does, into DIR (kernel.cubin,
   kernel.ptx, generated.cu, link.map, link.json);
2. assemble and build the one-unit control (:mod:`linker.control`): DIR/control.cu,
   control.cubin, control.ptx;
3. compare them on the CPU (:mod:`linker.parity`): ``.text`` and relocations per function,
   resources, normalized SASS (DIR/linked.sass, control.sass, sass.diff when a
   disassembler is found), calls left; DIR/parity.json holds the report;
4. with ``--args``, on a GPU: outputs bit for bit, then interleaved timing
   (:mod:`runtime.parity_timing`).

Exit status: 0 proved (identical, or different only where the notes explain it, and every
seam folded; with ``--args``, equal outputs), 1 not proved or rejected, 2 usage or I/O.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnostics.files import atomic_write_bytes, atomic_write_text
from diagnostics.model import Diagnostic, DiagnosticError, sort_diagnostics
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code

REPORT = "parity.json"


@dataclass
class ParityRun:
    """What one `kernlink parity` found: diagnostics (a rejection or a failure), the report, the timing."""

    diagnostics: list[Diagnostic]
    sources: SourceMap
    report: Any = None  # linker.parity.ParityReport
    timing: Any = None  # runtime.parity_timing.Timing
    written: list[Path] = field(default_factory=list)

    @property
    def proved(self) -> bool:
        return self.report is not None and self.report.proved and not any(d.is_error for d in self.diagnostics)

    def as_json(self) -> dict[str, Any]:
        from diagnostics.render_json import render_json
        from kernlink import __version__

        rendered = json.loads(render_json(self.diagnostics, tool_version=__version__))
        out: dict[str, Any] = {"proved": self.proved, "diagnostics": rendered["diagnostics"]}
        if self.report is not None:
            out["report"] = self.report.as_json()
        if self.timing is not None:
            out["timing"] = self.timing.as_json()
        return out


def parity(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    target: str | None = None,
    front_end: str | None = None,
    include_dirs: Sequence[str | Path] = (),
    disassemble: bool = True,
) -> ParityRun:
    """Link, build the control, compare (steps 1-3 of the module docstring); writes into ``out_dir``."""
    from analysis.link_inputs import link_inputs
    from kernlink.api import check
    from linker import sass
    from linker.control import CONTROL_SOURCE, FrontEnd, assemble, compile_control
    from linker.link import link_composition, write_outputs
    from linker.parity import compare

    root = Path(out_dir)
    result = check(paths, target=target)
    run = ParityRun(list(result.diagnostics), result.sources)
    comp = result.composition
    placed = result.downstream.placed if result.downstream is not None else None
    if not result.accepted or comp is None or placed is None:
        return run
    routes = result.downstream.routes if result.downstream is not None else None
    output = link_composition(comp, placed, emit_ptx=True, routes=routes)
    run.diagnostics = sort_diagnostics([*run.diagnostics, *output.diagnostics])
    try:
        run.written += write_outputs(output, root)
    except DiagnosticError as err:
        run.diagnostics.extend(err.diagnostics)
        return run
    generated = output.generated
    if not output.ok or generated is None or output.cubin is None:
        return run
    run.sources.add("generated.cu", generated.source)
    chosen: FrontEnd | None = "nvcc" if front_end == "nvcc" else "nvrtc" if front_end == "nvrtc" else None
    try:
        unit = assemble(link_inputs(comp), generated, front_end=chosen)
        atomic_write_text(root / CONTROL_SOURCE, unit.source)
        run.written.append(root / CONTROL_SOURCE)
        run.sources.add(CONTROL_SOURCE, unit.source)
        control = compile_control(unit, include_dirs=include_dirs, kernel=generated.dispatch.kernel)
    except DiagnosticError as err:
        run.diagnostics.extend(err.diagnostics)
        return run
    for name, data in (("control.cubin", control.cubin), ("control.ptx", control.ptx.encode())):
        atomic_write_bytes(root / name, data)
        run.written.append(root / name)
    tool = sass.find_disassembler() if disassemble else None
    attempt = output.record.attempts[-1]
    report = compare(
        comp.pipeline.name,
        generated,
        output.cubin,
        output.ptx or "",
        (attempt.spill_stores, attempt.spill_loads),
        control,
        tool,
    )
    run.report = report
    if report.sass.tool is not None:
        for name, listing in (("linked.sass", report.sass.linked), ("control.sass", report.sass.control)):
            atomic_write_text(root / name, _listing(listing))
            run.written.append(root / name)
        (root / "sass.diff").unlink(missing_ok=True)
        if report.sass.diff:
            atomic_write_text(root / "sass.diff", report.sass.diff)
            run.written.append(root / "sass.diff")
    write_report(run, root)
    return run


def write_report(run: ParityRun, root: Path) -> None:
    atomic_write_text(root / REPORT, json.dumps(run.as_json(), indent=2, sort_keys=True) + "\n")
    if root / REPORT not in run.written:
        run.written.append(root / REPORT)


def _listing(listing: Any) -> str:
    return "".join(
        f"// {name}\n" + "".join(f"{line}\n" for line in body) + "\n" for name, body in sorted(listing.items())
    )


# ----------------------------------------------------------------- rendering


def render(run: ParityRun, *, color: bool | None = None, width: int = 110) -> str:
    """The report as text: front end, `.text`, resources, SASS, calls, verdict (and timing)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(
        record=True,
        width=width,
        force_terminal=color is True,
        no_color=color is False,
        color_system="standard" if color else None,
        file=io.StringIO(),
    )
    report = run.report
    if report is None:
        return ""

    def line(text: str) -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    line(f"kernlink parity: pipeline `{report.pipeline}` ({report.target}), kernel `{report.kernel}`")
    front = report.front_end
    packages = ", ".join(f"{stage}: {tk}" for stage, tk in sorted(front["packages"].items()))
    line(
        f"front end: packages {packages}; control {front['control']} ({' '.join(front['control_options'])}); "
        f"link {' '.join(front['link_options'])}; the linked build's glue: NVRTC"
    )
    for note in report.notes:
        line(f"note: {note}")

    text = Table(title=".text per function", title_justify="left")
    for col in ("function", "linked B", "control B", "relocations", "identical"):
        text.add_column(col, justify="right" if col.endswith("B") else "left")
    for t in report.text:
        text.add_row(
            t.function,
            str(t.linked_bytes),
            str(t.control_bytes),
            "equal" if t.relocations_equal else "differ",
            "yes" if t.identical else "NO",
        )
    console.print(text)

    res = Table(title="resources of the kernel", title_justify="left")
    for col in ("resource", "linked", "control", "equal"):
        res.add_column(col)
    for r in report.resources:
        res.add_row(r.name, r.linked, r.control, "yes" if r.equal else "NO")
    console.print(res)

    s = report.sass
    if s.tool is None:
        line(f"SASS: not compared ({s.skipped}); the .text bytes above decide")
    else:
        counts = ", ".join(f"{name} {a} vs {b}" for name, (a, b) in sorted(s.instructions.items()))
        verdict = "identical" if s.identical else "DIFFERENT (sass.diff)"
        line(
            f"SASS ({s.tool}, normalized): {verdict}; instructions linked vs control: {counts}; "
            f"RET {s.rets[0]} vs {s.rets[1]}"
        )

    if not report.calls:
        line("calls left: none (no CALL in SASS, no call or .extern .func in the PTX): every handle folded")
    else:
        calls = Table(title="calls left", title_justify="left")
        for col in ("build", "in", "function", "op", "target", "kind"):
            calls.add_column(col)
        for c in report.calls:
            calls.add_row(
                c.build,
                c.where,
                c.function,
                c.op,
                c.target or "(indirect)",
                f"UNFOLDED: {c.seam}" if c.kind == "unfolded" else "kept (the component's own)",
            )
        console.print(calls)

    if run.timing is not None:
        t = run.timing
        line(
            f"timing on {t.device}: {t.rounds} interleaved rounds of {t.reps} launch(es), grid {t.grid}, "
            f"after {t.warmup} warm-ups; median ms per launch: linked {t.ms['linked']:.5f}, "
            f"control {t.ms['control']:.5f}, null {t.ms['null']:.5f}"
        )
        line(
            f"ratio linked/control {t.ratio.median:.5f} [95% {t.ratio.low:.5f}, {t.ratio.high:.5f}]; "
            f"null (the linked cubin loaded twice) {t.null.median:.5f} [{t.null.low:.5f}, {t.null.high:.5f}]"
        )
    line(_verdict(report))
    errors = [d for d in run.diagnostics if d.is_error]
    if errors:
        line("not proved: " + "; ".join(f"{d.code} {d.message}" for d in errors))
    return console.export_text(styles=bool(color))


def _verdict(report: Any) -> str:
    if report.proved and report.verdict == "identical":
        return (
            "proved: the linked kernel is the one-unit build (.text, relocations, resources"
            + (", SASS" if report.sass.identical else "")
            + " identical; every handle folded)"
        )
    if report.proved:
        return "proved with explanations: the builds differ only where the notes above say why"
    why = []
    if report.verdict == "differs":
        why.append("the linked kernel differs from the one-unit build")
    if report.unfolded:
        names = ", ".join(sorted({f"`{c.target or '(indirect)'}`" for c in report.unfolded}))
        why.append(f"seams not folded: {names}")
        control = {(c.where, c.target) for c in report.calls if c.build == "control"}
        if all((c.where, c.target) in control for c in report.unfolded):
            why.append(
                "the one-unit build keeps the same calls, so the components' code prevents inlining there "
                "(`__noinline__`, recursion, a call through a pointer)"
            )
    return "not proved: " + "; ".join(why)


# ----------------------------------------------------------------- the command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("parity", help="prove a link free: compare it with the same sources built as one unit")
    p.add_argument("paths", nargs="+", help="a pipeline (.kp) whose stages come from packages with source")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="the directory for the link's files, control.cu, control.cubin and parity.json",
    )
    p.add_argument("--target", help="link for another target than the pipeline's")
    p.add_argument(
        "--front-end",
        choices=("nvrtc", "nvcc"),
        help="compile the control with this front end (default: the packages')",
    )
    p.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="an include directory for the control (for headers the sources include with quotes)",
    )
    p.add_argument("--no-sass", action="store_true", help="do not disassemble (compare .text bytes and PTX only)")
    p.add_argument("--args", metavar="FILE", help="time on the GPU with these arguments (as `kernlink run` takes)")
    p.add_argument("--rounds", type=int, default=60, help="interleaved timing rounds (default 60)")
    p.add_argument("--warmup", type=int, default=10, help="warm-up launches of each build (default 10)")
    p.add_argument("--reps", type=int, default=10, help="launches per timed measurement (default 10)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_parity)


def cmd_parity(args: argparse.Namespace) -> int:
    from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED, EXIT_USAGE
    from kernlink.output import emit

    color = {"always": True, "never": False}.get(args.color)
    if args.rounds < 1 or args.warmup < 0 or args.reps < 1:
        print("error: --rounds and --reps must be at least 1, --warmup at least 0", file=sys.stderr)
        return EXIT_USAGE
    run = parity(
        args.paths,
        args.output,
        target=args.target,
        front_end=args.front_end,
        include_dirs=args.include_dirs,
        disassemble=not args.no_sass,
    )
    if run.report is not None and args.args is not None:
        _time(run, args, color)
    if args.format == "json":
        sys.stdout.write(json.dumps(run.as_json(), indent=2, sort_keys=True) + "\n")
    else:
        errors = [d for d in run.diagnostics if d.is_error]
        if errors or run.report is None:
            emit(run.diagnostics, run.sources, "text", color=color)
        if run.report is not None:
            sys.stdout.write(render(run, color=color))
    if any(d.code == Code.E_IO for d in run.diagnostics):
        return EXIT_USAGE
    return EXIT_OK if run.proved else EXIT_REJECTED


def _time(run: ParityRun, args: argparse.Namespace, color: bool | None) -> None:
    from rich.console import Console
    from rich.progress import Progress

    from runtime.parity_timing import time_parity

    root = Path(args.output)
    console = Console(stderr=True, no_color=color is False)
    try:
        with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
            task = bar.add_task("timing linked / control / null", total=args.rounds)
            run.timing = time_parity(
                root,
                (root / "control.cubin").read_bytes(),
                Path(args.args),
                rounds=args.rounds,
                warmup=args.warmup,
                reps=args.reps,
                progress=lambda done: bar.update(task, completed=done),
            )
    except DiagnosticError as err:
        run.diagnostics.extend(err.diagnostics)
    write_report(run, root)
