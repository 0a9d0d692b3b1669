"""Snapshot tests of the terminal renderer.

Golden outputs live in ``snapshots/<name>.txt``; after an intended change to the
layout, regenerate them with ``pytest --update-snapshots tests/diagnostics``
and review the diff.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from diagnostics import Diagnostic, Label, Severity, SourceMap, Span
from diagnostics.render_text import render_text
from diagnostics.span import UNKNOWN_SPAN
from tests.snapshots import assert_text_snapshot

SNAPSHOTS = Path(__file__).parent / "snapshots"

COMM = "specs/examples/cp/comm.kc"
LOAD = "specs/examples/cp/load.kc"
COMM_TEXT = "contract comm {\n" + "\n" * 10 + '    counter ready produce by push scope sys domain "cp"\n' + "}\n"
LOAD_TEXT = "contract load {\n" + "\n" * 7 + "    counter ready consume by load scope gpu\n}\n"


def assert_snapshot(name: str, actual: str) -> None:
    assert_text_snapshot(SNAPSHOTS / f"{name}.txt", actual)


def sources() -> SourceMap:
    smap = SourceMap()
    smap.add(COMM, COMM_TEXT)
    smap.add(LOAD, LOAD_TEXT)
    return smap


def l_pair() -> Diagnostic:
    return Diagnostic(
        code="L-PAIR",
        message="counter `ready` pairs a `sys`-scope producer with a `gpu`-scope consumer",
        labels=(
            Label(Span(COMM, 12, 5, 12, 56), "producer releases at `sys` scope"),
            Label(Span(LOAD, 9, 5, 9, 44), "consumer acquires at `gpu` scope", primary=False),
        ),
        notes=("a `gpu`-scope acquire does not observe a `sys`-scope release from the host",),
        helps=("declare both endpoints with the same scope",),
    )


def test_two_files_primary_and_secondary() -> None:
    assert_snapshot("l_pair_two_files", render_text([l_pair()], sources(), color=False))


def test_secondary_listed_first_still_renders_primary_file_first() -> None:
    diag = l_pair()
    swapped = Diagnostic(diag.code, diag.message, labels=diag.labels[::-1], notes=diag.notes)
    text = render_text([swapped], sources(), color=False)
    assert text.index(f"--> {COMM}:12:5") < text.index(f"::: {LOAD}:9:5")


def test_multi_line_span_underlines_first_line_then_ellipsis() -> None:
    smap = SourceMap()
    smap.add("a.kc", "stage mma {\n  warps 4\n  smem 1024\n}\n")
    diag = Diagnostic(
        code="L-ROLE",
        message="role `mma` has no entry",
        labels=(Label(Span("a.kc", 1, 7, 4, 2), "this role"),),
    )
    assert_snapshot("multi_line_span", render_text([diag], smap, color=False))


def test_unknown_source_still_prints_locations() -> None:
    smap = SourceMap()
    smap.add("short.kc", "one line\n")
    diag = Diagnostic(
        code="L-SYMBOL",
        message="entry `mma_main` is not defined by the object",
        labels=(
            Label(Span("build/gen/stub.cu", 40, 3, 40, 11), "declared here"),
            Label(Span("build/gen/stub.cu", 52, 1, 52, 2), primary=False),
            Label(Span("short.kc", 30, 1, 30, 4), "past the end of the file", primary=False),
        ),
    )
    assert_snapshot("unknown_source", render_text([diag], smap, color=False))


def test_labels_on_one_line_each_get_an_underline_and_gaps_are_elided() -> None:
    smap = SourceMap()
    smap.add("c.kc", "\n".join(f"line {n}" for n in range(1, 10)) + "\nsmem a, b size 64\n")
    diag = Diagnostic(
        code="L-OVERLAP",
        message="claims `a` and `b` overlap in shared memory",
        labels=(
            Label(Span("c.kc", 10, 9, 10, 10), "second claim", primary=False),
            Label(Span("c.kc", 10, 6, 10, 7), "first claim"),
            Label(Span("c.kc", 2, 1, 2, 7), "capacity set here", primary=False),
        ),
    )
    assert_snapshot("same_line_labels", render_text([diag], smap, color=False))


def test_a_single_skipped_line_is_shown_rather_than_elided() -> None:
    smap = SourceMap()
    smap.add("g.kc", "one\ntwo\nthree\n")
    diag = Diagnostic(
        code="E-SYNTAX",
        message="unclosed block",
        labels=(
            Label(Span("g.kc", 1, 1, 1, 4), "opened here"),
            Label(Span("g.kc", 3, 1, 3, 6), "still open here", primary=False),
        ),
    )
    assert render_text([diag], smap, color=False) == (
        "error[E-SYNTAX]: unclosed block\n"
        " --> g.kc:1:1\n"
        "  |\n"
        "1 | one\n"
        "  | ^^^ opened here\n"
        "2 | two\n"
        "3 | three\n"
        "  | ----- still open here\n"
    )


def test_tabs_and_wide_characters_keep_underlines_aligned() -> None:
    smap = SourceMap()
    smap.add("t.kc", "\tfact 名前 = 3\n")
    diag = Diagnostic(
        code="E-SYNTAX",
        message="expected an integer",
        severity=Severity.ERROR,
        labels=(Label(Span("t.kc", 1, 10, 1, 13), "here"),),
    )
    text = render_text([diag], smap, color=False)
    source_line, underline = text.splitlines()[3:5]
    assert source_line == "1 |     fact 名前 = 3"
    assert underline == "  |               ^^^ here"


def test_input_error_without_labels_and_no_explain_line() -> None:
    diag = Diagnostic(
        code="E-IO",
        message="cannot read `missing.kp`: No such file or directory",
        helps=("check the path",),
    )
    assert render_text([diag], SourceMap(), color=False) == (
        "error[E-IO]: cannot read `missing.kp`: No such file or directory\n  = help: check the path\n"
    )


def test_clause_without_labels_ends_with_explain_line() -> None:
    diag = Diagnostic(code="L-TOPO", message="no cluster shape is accepted by every stage")
    assert render_text([diag], SourceMap(), color=False) == (
        "error[L-TOPO]: no cluster shape is accepted by every stage\n  = run `kernlink explain L-TOPO`\n"
    )


def test_several_diagnostics_with_summary() -> None:
    warning = Diagnostic(
        code="L-DEPTH",
        message="ring `kv` depth 1 serialises producer and consumer",
        severity=Severity.WARNING,
        labels=(Label(Span(LOAD, 9, 19, 9, 26), "depth 1"),),
    )
    note = Diagnostic(code="I-PLACED", message="placed 3 claims", severity=Severity.NOTE)
    second = Diagnostic(
        code="L-UNPAIRED",
        message="ring `kv` has no consumer",
        labels=(Label(Span(LOAD, 1, 10, 1, 14), "produced here"),),
    )
    output = render_text([note, warning, l_pair(), second], sources(), color=False, summary="composition rejected")
    assert_snapshot("several_with_summary", output)
    assert output.endswith("error: composition rejected with 2 errors, 1 warning, 1 note\n")


@pytest.mark.parametrize(
    ("severities", "expected"),
    [
        ([Severity.WARNING], "warning: composition accepted with 1 warning\n"),
        ([Severity.WARNING, Severity.WARNING], "warning: composition accepted with 2 warnings\n"),
        ([], "note: composition accepted with no diagnostics\n"),
    ],
)
def test_summary_line_wording(severities: list[Severity], expected: str) -> None:
    diags = [Diagnostic(code="L-DEPTH", message=f"warning {n}", severity=sev) for n, sev in enumerate(severities)]
    output = render_text(diags, SourceMap(), color=False, summary="composition accepted")
    assert output.endswith(expected)
    assert render_text([], SourceMap(), color=False) == ""


def test_order_of_input_does_not_change_output() -> None:
    diags = [
        l_pair(),
        Diagnostic(code="L-UNPAIRED", message="b", labels=(Label(Span(LOAD, 1, 1, 1, 2)),)),
        Diagnostic(code="E-SYNTAX", message="a", labels=(Label(Span(COMM, 1, 1, 1, 2)),)),
    ]
    assert render_text(diags, sources(), color=False) == render_text(diags[::-1], sources(), color=False)


def test_long_notes_wrap_under_their_text() -> None:
    diag = Diagnostic(
        code="E-TOO-LARGE",
        message="`x.kc` is too large",
        notes=(" ".join(["word"] * 30),),
    )
    lines = render_text([diag], SourceMap(), color=False, width=60).splitlines()
    assert lines[1].startswith("  = note: word")
    assert all(len(line) <= 60 for line in lines[1:])
    assert lines[2].startswith(" " * len("  = note: ") + "word")


def test_colour_is_off_when_asked() -> None:
    assert "\x1b[" not in render_text([l_pair()], sources(), color=False)


def test_colour_is_on_when_asked() -> None:
    text = render_text([l_pair()], sources(), color=True)
    assert "\x1b[1;31merror[L-PAIR]\x1b[0m" in text
    plain = render_text([l_pair()], sources(), color=False)
    assert _strip_ansi(text) == plain


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_colour_follows_stdout_when_not_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr("sys.stdout", _Stream(tty=False))
    assert "\x1b[" not in render_text([l_pair()], sources())
    monkeypatch.setattr("sys.stdout", _Stream(tty=True))
    assert "\x1b[" in render_text([l_pair()], sources())
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in render_text([l_pair()], sources())


def test_unknown_span_renders_its_placeholder_location() -> None:
    diag = Diagnostic(code="E-INTERNAL", message="span lost", labels=(Label(UNKNOWN_SPAN),))
    assert "--> <unknown>:1:1" in render_text([diag], SourceMap(), color=False)


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
