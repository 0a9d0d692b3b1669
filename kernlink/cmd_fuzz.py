"""`kernlink fuzz`: mutate a composition and report which clause catches each edit (the fuzzing package)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kernlink import output
from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED

if TYPE_CHECKING:
    from fuzzing.campaign import Campaign
    from fuzzing.report import Report


def register(sub: Any) -> None:
    from fuzzing.campaign import default_jobs

    p = sub.add_parser("fuzz", help="mutate a composition and report which clause catches each edit")
    p.add_argument("paths", nargs="*", help="a pipeline (.kp) and optionally contracts (.kc) or packages (.kpkg)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--examples", type=int, help="check this many mutants (default 1000)")
    budget.add_argument("--seconds", type=float, help="check mutants for this long")
    p.add_argument("--seed", type=int, help="the campaign's seed (printed; default: a fresh one)")
    p.add_argument(
        "--edits",
        type=int,
        default=2,
        help="stack up to this many edits per mutant once every single edit is checked (default 2)",
    )
    p.add_argument("--kinds", help="only these mutation kinds (comma-separated; see --list-kinds)")
    p.add_argument("--list-kinds", action="store_true", help="print the mutation catalogue and exit")
    p.add_argument("--target", help="fuzz for another target (sm_90a, sm_100a, sm_120a)")
    p.add_argument("--select", help="only these clause codes (comma-separated)")
    p.add_argument("--ignore", help="skip these clause codes (comma-separated)")
    p.add_argument("--jobs", type=int, default=default_jobs(), help="worker processes (default: CPU count)")
    p.add_argument(
        "--show-accepted",
        type=int,
        default=40,
        metavar="N",
        help="list at most N accepted mutants in text output (default 40)",
    )
    p.add_argument("--out", help="write each checker bug's reproducer (pipeline.kp + stages.kc) under this folder")
    p.add_argument(
        "--code",
        action="store_true",
        help="mutate the PTX of every package instead of the contracts: a code-mutation campaign (fuzzing/code.py)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_fuzz)


def cmd_fuzz(args: Any) -> int:
    import json
    import sys

    from checker.engine import selected
    from fuzzing.campaign import Campaign, new_seed, replace_kinds
    from fuzzing.subject import load_subject
    from package.loader import UsageError

    color = output.color(args.color)
    if args.list_kinds:
        _print_kinds(color)
        return EXIT_OK
    if not args.paths:
        raise UsageError("give the composition to fuzz: a pipeline (.kp), its folder, or contracts (.kc)")
    if (args.examples is not None and args.examples < 1) or (args.seconds is not None and args.seconds <= 0):
        raise UsageError("the budget must be positive")
    if args.edits < 1 or args.jobs < 1:
        raise UsageError("--edits and --jobs must be at least 1")
    if args.code:
        return _code_campaign(args, color)
    kinds = replace_kinds(_split(args.kinds)) if args.kinds else None
    clauses = selected(_split(args.select) or None, _split(args.ignore) or None)
    subject = load_subject(args.paths, target=args.target)
    seed = args.seed if args.seed is not None else new_seed()
    campaign = Campaign(subject, seed, max_edits=args.edits, kinds=kinds, clauses=clauses)
    if not campaign.plan.singles:
        raise UsageError("no edit of the chosen kinds applies to this composition (see --list-kinds)")
    base = campaign.baseline()
    if base:
        output.emit(
            base,
            subject.inputs.sources,
            "text",
            color=color,
            summary="the composition is rejected before any mutation: fix it, then fuzz it",
        )
        return EXIT_REJECTED
    report = _run_with_progress(campaign, args, color)
    if args.out:
        _write_reproducers(campaign, report, args.out)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_json(subject.bundle), indent=2, sort_keys=True) + "\n")
    else:
        render_report(report, campaign, args, color=color)
    return EXIT_REJECTED if report.bugs else EXIT_OK


def _code_campaign(args: Any, color: bool | None) -> int:
    """``--code``: mutate each package's PTX; exit 1 when a mutant that changes the protocol is accepted."""
    import json
    import sys

    from rich.console import Console
    from rich.table import Table

    from analysis.pipeline import input_diagnostics, resolve_inputs
    from fuzzing.code import CODE_KINDS, run_code_campaign
    from package.loader import UsageError, load

    kinds = frozenset(_split(args.kinds)) if args.kinds else None
    unknown = sorted((kinds or frozenset()) - set(CODE_KINDS))
    if unknown:
        raise UsageError(f"unknown code mutation kind(s): {', '.join(unknown)} (known: {', '.join(CODE_KINDS)})")
    inputs = load(args.paths)
    comp = resolve_inputs(inputs, args.target)
    if comp is None or inputs.pipeline is None:
        problems = "; ".join(d.message for d in input_diagnostics(inputs)[:3])
        raise UsageError(f"no composition to fuzz{': ' + problems if problems else ''}")
    report = run_code_campaign(comp, inputs.pipeline_source, kinds=kinds, seconds=args.seconds, examples=args.examples)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
        return EXIT_REJECTED if report.accepted() else EXIT_OK
    console = Console(force_terminal=color, no_color=color is False, highlight=False, width=140)
    console.print(
        f"kernlink fuzz --code {report.subject}: {len(report.outcomes)} of {report.planned} mutants in "
        f"{report.seconds:.1f} s",
        markup=False,
    )
    verdicts = ("rejected", "equivalent", "outside", "undecided", "accepted")
    for title, key in (("component", "by_component"), ("mutation", "by_kind")):
        table = Table(title_justify="left")
        table.add_column(title, no_wrap=True)
        for column in ("mutants", *verdicts):
            table.add_column(column, justify="right")
        for row in report.to_json()[key]:
            table.add_row(row["name"], str(row["mutants"]), *(str(row[v]) for v in verdicts))
        console.print(table)
    for out in report.accepted()[: max(args.show_accepted, 0)]:
        console.print(f"accepted: {out.mutation.describe()}", markup=False)
    if not report.accepted():
        console.print("no accepted mutant changes the protocol", markup=False)
    return EXIT_REJECTED if report.accepted() else EXIT_OK


def _split(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _run_with_progress(campaign: Campaign, args: Any, color: bool | None) -> Report:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    size = campaign.plan.size()
    examples = args.examples if args.examples is not None or args.seconds is not None else 1000
    total: float | None = None
    if args.seconds is None:
        total = float(min(x for x in (examples, size) if x is not None))
    console = Console(stderr=True, force_terminal=color, no_color=color is False)
    columns = [TextColumn("fuzzing"), BarColumn(), MofNCompleteColumn(), TextColumn("mutants"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("fuzz", total=total)

        def advance(n: int) -> None:
            bar.update(task, advance=n)

        return campaign.run(examples=args.examples, seconds=args.seconds, jobs=args.jobs, progress=advance)


def _print_kinds(color: bool | None) -> None:
    from rich.console import Console
    from rich.table import Table

    from fuzzing.compositions.catalogue import MUTATION_KINDS

    table = Table(title="mutation kinds", title_justify="left")
    table.add_column("kind", no_wrap=True)
    table.add_column("edit")
    for kind, text in MUTATION_KINDS.items():
        table.add_row(kind, text)
    Console(force_terminal=color, no_color=color is False, highlight=False).print(table)


def render_report(report: Report, campaign: Campaign, args: Any, *, color: bool | None) -> None:
    from rich.console import Console
    from rich.table import Table

    from fuzzing.check import BUG_KINDS

    console = Console(force_terminal=color, no_color=color is False, highlight=False)
    if not console.is_terminal:
        console = Console(force_terminal=color, no_color=color is False, highlight=False, width=140)
    bundle = campaign.subject.bundle
    console.print(
        f"kernlink fuzz {report.subject}: seed {report.seed}, {len(report.outcomes)} mutants in "
        f"{report.seconds:.1f} s ({report.rate:.0f} mutants/s, {report.jobs} "
        f"{'job' if report.jobs == 1 else 'jobs'}; stopped: {report.stopped})",
        markup=False,
    )
    table = Table(title_justify="left")
    for column, justify in (
        ("mutation", "left"),
        ("mutants", "right"),
        ("rejected", "right"),
        ("accepted", "right"),
        ("bugs", "right"),
        ("rejected by", "left"),
    ):
        table.add_column(column, justify=justify, no_wrap=column == "mutation")  # type: ignore[arg-type]
    totals = Counter[str]()
    for row in report.by_kind():
        codes = ", ".join(f"{code} ×{n}" if n > 1 else code for code, n in row["by_clause"].most_common())
        table.add_row(
            row["kind"],
            str(row["mutants"]),
            str(row["rejected"]),
            str(row["accepted"]),
            str(row["bugs"]) if row["bugs"] else "",
            codes,
        )
        for key in ("mutants", "rejected", "accepted", "bugs"):
            totals[key] += row[key]
    table.add_section()
    table.add_row(
        "total",
        str(totals["mutants"]),
        str(totals["rejected"]),
        str(totals["accepted"]),
        str(totals["bugs"]) if totals["bugs"] else "",
        "",
    )
    console.print(table)
    accepted = report.accepted()
    if accepted:
        shown = accepted[: max(args.show_accepted, 0)]
        listing = Table(title=f"accepted mutants ({len(accepted)})", title_justify="left")
        listing.add_column("#", justify="right")
        listing.add_column("mutation", no_wrap=True)
        listing.add_column("edit", overflow="fold")
        for out in shown:
            listing.add_row(str(out.index), out.kind, out.mutation.describe(bundle))
        if shown:
            console.print(listing)
        if len(shown) < len(accepted):
            console.print(
                f"… and {len(accepted) - len(shown)} more (`--show-accepted N` or `--format json` lists them)",
                markup=False,
            )
    oracles = ", ".join(report.oracles) if report.oracles else "none available in this build"
    console.print(f"independent re-verification of accepted mutants: {oracles}", markup=False)
    for why, count in report.unverified().items():
        console.print(f"  not re-verified: {count} accepted mutant(s), {why}", markup=False)
    if report.bugs:
        again = f" (and {report.duplicates} more mutant(s) shrinking to one of them)" if report.duplicates else ""
        console.print(f"[bold red]{len(report.bugs)} checker bug(s)[/]{again}")
        for out, small, text in report.bugs:
            console.print(
                f"mutant #{out.index} ({out.kind}): {BUG_KINDS.get(out.classification.bug or '', '')}"
                + (f" [{out.classification.by}]" if out.classification.bug == "oracle" else ""),
                markup=False,
            )
            for problem in out.classification.problems:
                console.print(f"  = {problem}", markup=False)
            console.print(f"  shrunk to {len(small.edits)} edit(s); reproducer:", markup=False)
            console.print(text.rstrip("\n"), markup=False)
    else:
        console.print("no checker bugs found", markup=False)
    replay = f"kernlink fuzz {' '.join(args.paths)} --seed {report.seed} --examples {len(report.outcomes)}"
    if args.edits != 2:
        replay += f" --edits {args.edits}"
    for flag in ("kinds", "select", "ignore", "target"):
        value = getattr(args, flag)
        if value:
            replay += f" --{flag} {value}"
    console.print(f"replay: {replay}", markup=False)


def _write_reproducers(campaign: Campaign, report: Report, out: str) -> None:
    from pathlib import Path

    from contract_lang.printer import print_node
    from diagnostics.files import atomic_write_text
    from fuzzing.compositions.bundle import Bundle

    for result, small, _ in report.bugs:
        folder = Path(out) / f"bug-{report.seed}-{result.index}"
        folder.mkdir(parents=True, exist_ok=True)
        units = campaign.checker.units(small)
        bundle = Bundle.of(units)
        header = "".join(f"# {e.describe(campaign.subject.bundle)}\n" for e in small.edits)
        atomic_write_text(folder / "pipeline.kp", header + print_node(bundle.pipeline))
        stages = "\n".join(print_node(s) for s in bundle.stages)
        atomic_write_text(folder / "stages.kc", header + stages)
