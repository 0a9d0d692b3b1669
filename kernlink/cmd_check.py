"""`kernlink check`: accept a composition, or name every violated clause (``--watch``: again on every change)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from diagnostics.symbols import Code
from kernlink.output import color, emit, progress

if TYPE_CHECKING:
    from checker.memo import Memo


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kernlink.options import add_policy_arguments
    from kernlink.paths import output_path
    from solver import BUDGETS  # Z3 comes with it: the check needs it anyway

    p = sub.add_parser("check", help="check a composition: accept, or name every violated clause")
    p.add_argument("paths", nargs="+", help="a pipeline (.kp) and optionally contracts (.kc) or packages (.kpkg)")
    p.add_argument("--target", help="re-check for another target (sm_90a, sm_100a, sm_120a)")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("--select", help="only these clause codes (comma-separated)")
    p.add_argument("--ignore", help="skip these clause codes (comma-separated)")
    add_policy_arguments(
        p,
        "warnings about the inputs are errors (a `.kc` that differs from its package's contract), "
        "so are code sites the conformance analysis cannot decide, and a package that cannot be bound "
        "(as --require-binding)",
    )
    p.add_argument(
        "--rlimit", type=int, metavar="N", help="Z3 resource budget of each protocol-model query (default 400000000)"
    )
    p.add_argument(
        "--time-budget",
        type=float,
        metavar="SECONDS",
        help="wall-clock seconds the check may take before it stops with E-SOLVER-BUDGET "
        f"(default {BUDGETS.check_seconds:g}; 0: none)",
    )
    p.add_argument(
        "--bound",
        type=int,
        metavar="K",
        help="check the protocol in the bounded model, each role running K iterations, instead of proving it "
        "for every depth and trip count (the bounded model's default: 2 x ring depth + 1)",
    )
    p.add_argument(
        "--stage",
        action="store_true",
        help="check the stages of the given contracts (.kc) alone, open-world: what the other stages must provide "
        "is assumed (I-ASSUMED notes) and only these stages' own defects are errors",
    )
    p.add_argument("-o", "--output", type=output_path, help="write the report to a file instead of stdout")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument(
        "--watch",
        action="store_true",
        help="check again whenever the pipeline, a contract beside it or one of its packages changes",
    )
    p.set_defaults(run=cmd_watch)


def cmd_check(args: argparse.Namespace, memo: Memo | None = None) -> int:
    """One check; ``memo`` carries verdicts from the earlier checks of ``--watch``."""
    from checker.engine import ModelOptions
    from kernlink.api import check
    from kernlink.exit_codes import exit_for
    from package.loader import UsageError
    from solver import BUDGETS, Deadline

    try:
        options = ModelOptions(args.rlimit if args.rlimit is not None else ModelOptions.rlimit, args.bound)
    except ValueError as err:
        raise UsageError(str(err)) from err
    if args.stage and any(not str(p).endswith(".kc") for p in args.paths):
        raise UsageError("`--stage` checks stages alone: give their contracts (.kc), not a pipeline or a package")
    seconds = BUDGETS.check_seconds if args.time_budget is None else args.time_budget
    if not 0 <= seconds < float("inf"):
        raise UsageError("--time-budget needs a number of seconds, 0 for none")
    deadline = Deadline(seconds)
    with progress(deadline, "checking"):
        result = check(
            args.paths,
            target=args.target,
            select=_codes(args.select),
            ignore=_codes(args.ignore),
            strict=args.strict,
            options=options,
            memo=memo,
            host_code=not args.no_host_code,
            require_binding=args.require_binding,
            deadline=deadline,
        )
    diags = result.diagnostics
    what = "composition"
    if args.stage:
        from kernlink.stage_check import split

        inputs = result.inputs
        diags = split(diags, [c.stage for c in inputs.candidates] if inputs is not None else [])
        what = "stage"
    n_err = sum(1 for d in diags if d.is_error)
    summary = f"{what} rejected" if n_err else f"{what} accepted"
    if any(d.code == Code.E_SOLVER_BUDGET and "seconds" in dict(d.data) for d in diags):
        summary = f"composition not decided in time (`--time-budget {seconds:g}`)"
    if any(d.code == Code.E_INTERNAL for d in diags):
        summary = "composition not decided: kernlink failed (exit 3)"
    emit(diags, result.sources, args.format, color=color(args.color), summary=summary, output=args.output)
    return exit_for(diags)


def cmd_watch(args: argparse.Namespace) -> int:
    """`check`, once or (``--watch``) again after every change of an input (kernlink/builder/watch.py)."""
    if not args.watch:
        return cmd_check(args)
    from checker.memo import Memo
    from kernlink.builder.watch import watch

    memo = Memo()
    return watch(args.paths, lambda: cmd_check(args, memo), say=lambda line: print(line, flush=True))


def _codes(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None
