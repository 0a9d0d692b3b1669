"""Hostile input (issue 20 items 1-6, 10, 11): each case ends in its diagnostic and exit code,
within bounded time and memory, never a traceback. Large inputs are made at test time."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import SupportsIndex

import pytest

from checker.clause import internal_error as _internal
from diagnostics.model import Diagnostic, Label
from diagnostics.render_text import render_text
from diagnostics.sources import SourceMap
from diagnostics.span import Span
from package.kpkg import _HEADER, FORMAT_VERSION, MAGIC, read_package
from tests.hostile.harness import MiB, run_cli

REPO = Path(__file__).resolve().parents[2]
BASE_PACKAGE = REPO / "tests/checker/clauses/L-INTEGRITY/pass_intact/loader.kpkg"
EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def stage(*items: str, name: str = "demo.a", version: str = "1.0.0") -> str:
    body = "".join(f"    {item}\n" for item in ("target sm_90a", "role main entry a_main warps 4", *items))
    return f'stage "{name}" version "{version}" {{\n{body}}}\n'


def contract(tmp_path: Path, text: str, name: str = "a.kc") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def check(tmp_path: Path, *paths: str, fmt: str = "text") -> tuple[int, str, list[str]]:
    outcome = run_cli(["check", "--color", "never", "--format", fmt, *paths], cwd=tmp_path)
    return outcome.status, outcome.output, outcome.codes()


# ----------------------------------------------------------------- 1. bounded recursion


@pytest.mark.parametrize(
    ("expr", "where"),
    [
        ("not " * 486 + "x == 1", "operator 257"),
        ("(x + " * 486 + "x" + ")" * 486 + " > 0", "operator 257"),
        (" + ".join(["x"] * 979) + " > 0", "operator 257"),
    ],
    ids=["deep-not", "right-nested", "flat-979"],
)
def test_deep_and_long_expressions_are_too_large_at_the_token(tmp_path: Path, expr: str, where: str) -> None:
    path = contract(tmp_path, stage("owns fact x: u32 in 1..8", f"requires fact {expr}"))
    outcome = run_cli(["check", "--color", "never", path.name], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_REJECTED)
    assert outcome.codes() == ["E-TOO-LARGE"]
    assert where in outcome.output and "a.kc:5:" in outcome.output


# ----------------------------------------------------------------- 2. huge integers


@pytest.mark.parametrize(
    "item",
    [
        "role big warps " + "9" * 4301,
        "claim smem t bytes " + "9" * 4301 + "KiB",
        "claim smem t bytes 0x" + "f" * 5000,
        "owns fact x: u64 = 18446744073709551616",
        "requires fact x < " + "1" * 5000,
        "cluster 1x" + "2" * 5000 + "x1",
    ],
    ids=["decimal", "kib", "hex", "u64-plus-one", "expression", "cluster"],
)
def test_integers_out_of_range_are_e_value(tmp_path: Path, item: str) -> None:
    path = contract(tmp_path, stage("owns fact y: u32 = 1", item))
    outcome = run_cli(["check", "--color", "never", path.name], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_REJECTED)
    assert outcome.codes() == ["E-VALUE"]
    assert "a.kc:5:" in outcome.output


def test_versions_of_5000_digits_are_e_value(tmp_path: Path) -> None:
    contract(tmp_path, stage(version="1.0." + "9" * 5000))
    requirement = "^1." + "9" * 5000
    (tmp_path / "p.kp").write_text(f'pipeline "p" {{\n    target sm_90a\n    use "demo.a" version {requirement}\n}}\n')
    outcome = run_cli(["check", "--color", "never", "p.kp"], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_REJECTED)
    assert outcome.codes() == ["E-VALUE", "E-VALUE"]


def test_a_hex_literal_at_the_top_of_its_range_is_printed(tmp_path: Path) -> None:
    """A hex literal that parses is a number every clause can print."""
    path = contract(tmp_path, stage("claim smem t bytes 0xFFFFFFFFFFFFFFFF"))
    outcome = run_cli(["check", "--color", "never", path.name], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_REJECTED)
    assert "E-VALUE" not in outcome.codes() and "18446744073709551615" in outcome.output


# ----------------------------------------------------------------- 3. duplicates


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (("target sm_100a",), "`target` is given twice"),
        (("claim smem t bytes 1KiB", "claim smem t bytes 2KiB"), "claim `t` is declared twice"),
    ],
    ids=["target", "claim"],
)
def test_duplicates_are_e_duplicate_with_both_spans(tmp_path: Path, items: tuple[str, ...], message: str) -> None:
    path = contract(tmp_path, stage(*items))
    outcome = run_cli(["check", "--color", "never", "--format", "json", path.name], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_REJECTED)
    (diag,) = json.loads(outcome.output)["diagnostics"]
    assert diag["code"] == "E-DUPLICATE" and message in diag["message"]
    assert len(diag["labels"]) == 2


# ----------------------------------------------------------------- 4. files that are not files


def _pipeline(tmp_path: Path, package: str) -> None:
    use = f'use "demo.a" version ^1.0 from "{package}"'
    (tmp_path / "p.kp").write_text(f'pipeline "p" {{\n    target sm_90a\n    {use}\n}}\n')


def test_a_fifo_as_a_package_is_e_io(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "a.kpkg")
    _pipeline(tmp_path, "a.kpkg")
    outcome = run_cli(["check", "--color", "never", "p.kp"], cwd=tmp_path, seconds=10)
    outcome.assert_clean(status=EXIT_USAGE)
    assert outcome.codes()[0] == "E-IO" and "`a.kpkg`: it is a FIFO" in outcome.output


def test_a_fifo_contract_beside_the_pipeline_is_e_io(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "b.kc")
    contract(tmp_path, stage())
    (tmp_path / "p.kp").write_text('pipeline "p" {\n    target sm_90a\n    use "demo.a" version ^1.0\n}\n')
    outcome = run_cli(["check", "--color", "never", "p.kp"], cwd=tmp_path, seconds=10)
    outcome.assert_clean(status=EXIT_USAGE)
    assert outcome.codes() == ["E-IO"] and "b.kc" in outcome.output


@pytest.mark.parametrize("command", ["check", "inspect"])
def test_dev_zero_as_a_package_is_e_io_in_bounded_memory(tmp_path: Path, command: str) -> None:
    _pipeline(tmp_path, "/dev/zero")
    argv = ["check", "--color", "never", "p.kp"] if command == "check" else ["inspect", "/dev/zero"]
    outcome = run_cli(argv, cwd=tmp_path, memory=512 * MiB)
    outcome.assert_clean(status=EXIT_USAGE, memory=64 * MiB)
    assert outcome.codes()[0] == "E-IO" and "/dev/zero" in outcome.output


def test_a_contract_symlinked_to_dev_zero_is_read_once_and_capped(tmp_path: Path) -> None:
    (tmp_path / "z.kc").symlink_to("/dev/zero")
    outcome = run_cli(["check", "--color", "never", "z.kc"], cwd=tmp_path, memory=512 * MiB)
    outcome.assert_clean(status=EXIT_USAGE, memory=64 * MiB)
    assert outcome.codes() == ["E-IO"]


def test_a_sparse_3_gib_package_is_refused_before_reading(tmp_path: Path) -> None:
    with open(tmp_path / "big.kpkg", "wb") as sparse:
        sparse.truncate(3 << 30)
    outcome = run_cli(["inspect", "big.kpkg", "--color", "never"], cwd=tmp_path, memory=512 * MiB)
    outcome.assert_clean(status=EXIT_REJECTED, memory=64 * MiB)
    assert outcome.codes() == ["E-TOO-LARGE"]


def test_a_symlink_loop_is_e_io(tmp_path: Path) -> None:
    (tmp_path / "loop.kpkg").symlink_to("loop.kpkg")
    (tmp_path / "loop.kc").symlink_to("loop.kc")
    contract(tmp_path, stage())
    _pipeline(tmp_path, "loop.kpkg")
    outcome = run_cli(["check", "--color", "never", "p.kp"], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_USAGE)
    assert outcome.codes()[:2] == ["E-IO", "E-IO"] and "symbolic links" in outcome.output


# ----------------------------------------------------------------- 5. crafted packages


def _crafted(tmp_path: Path, edit: str, value: object = None) -> Path:
    """The base package with its manifest edited and every hash recomputed (the format allows it)."""
    base = read_package(BASE_PACKAGE)
    manifest = json.loads(json.dumps(dict(base.manifest)))
    marker = '"__HOSTILE__"'
    if edit == "contract":
        manifest["contract"] = value
    elif edit == "params":
        manifest["captured"]["params"] = value
    else:
        manifest["extra"] = "__HOSTILE__"
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body = (text.replace(marker, str(value)) if edit == "raw" else text).encode("utf-8")
    blobs = [base.payloads[name] for name in sorted(base.payloads)]
    data = b"".join([_HEADER.pack(MAGIC, FORMAT_VERSION, len(body)), body, hashlib.sha256(body).digest(), *blobs])
    path = tmp_path / "crafted.kpkg"
    path.write_bytes(data)
    return path


BASE_CONTRACT = 'stage "demo.loader" version "1.0.0" {\n    target sm_90a\n    role load entry loader_main warps 1\n}\n'


@pytest.mark.parametrize(
    ("edit", "value", "code"),
    [
        ("raw", "[" * 100_000 + "]" * 100_000, "L-INTEGRITY"),
        ("raw", "1e400", "L-INTEGRITY"),
        ("raw", '"\\ud800"', "L-INTEGRITY"),
        ("raw", "9" * 4301, "L-INTEGRITY"),
        ("contract", BASE_CONTRACT.replace("warps 1", "warps " + "9" * 4301), "E-VALUE"),
        ("contract", BASE_CONTRACT + "# " + "x" * (2 * MiB) + "\n", "L-INTEGRITY"),
        ("params", [{"name": "P", "size": 8, "align": 8, "fields": [["a", 0, 4, 9]]}], "L-INTEGRITY"),
    ],
    ids=["deep-json", "1e400", "lone-surrogate", "4301-digit-int", "contract-int", "contract-2mib", "params-4-fields"],
)
@pytest.mark.parametrize("command", ["check", "inspect"])
def test_crafted_packages_are_diagnosed(tmp_path: Path, edit: str, value: object, code: str, command: str) -> None:
    _crafted(tmp_path, edit, value)
    (tmp_path / "p.kp").write_text(
        'pipeline "p" {\n    target sm_90a\n    use "demo.loader" version ^1.0 from "crafted.kpkg"\n}\n'
    )
    argv = ["check", "p.kp"] if command == "check" else ["inspect", "crafted.kpkg"]
    outcome = run_cli([*argv, "--color", "never"], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_REJECTED, seconds=15)
    assert outcome.codes()[0] == code


# ----------------------------------------------------------------- 6. terminal escapes

ESCAPES = "\x1b]0;owned\x07\x1b[2J\u202e"


def test_control_characters_are_escaped_in_text_and_kept_in_json(tmp_path: Path) -> None:
    path = contract(tmp_path, stage(f"target sm_100a  # {ESCAPES}", name=f"demo{ESCAPES}"))
    text = run_cli(["check", "--color", "never", path.name], cwd=tmp_path)
    text.assert_clean(status=EXIT_REJECTED)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", text.output)
    assert "\\x1b]0;owned\\x07" in text.output and "\\u202e" in text.output
    data = run_cli(["check", "--format", "json", path.name], cwd=tmp_path)
    data.assert_clean(status=EXIT_REJECTED)
    (diag,) = json.loads(data.output)["diagnostics"]
    assert ESCAPES in diag["message"]


def test_fit_escapes_what_it_echoes_from_an_input(tmp_path: Path) -> None:
    path = contract(tmp_path, stage("requires feature tmem", name=f"demo{ESCAPES}").replace("sm_90a", "sm_100a"))
    outcome = run_cli(["fit", path.name, "--targets", "sm_90a"], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_REJECTED)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", outcome.output)
    assert "L-FEATURE stage `demo\\x1b]0;owned\\x07\\x1b[2J\\u202e` needs `tmem`" in outcome.output


def test_a_crafted_package_cannot_drive_the_terminal_through_inspect(tmp_path: Path) -> None:
    _crafted(tmp_path, "contract", BASE_CONTRACT.replace("warps 1", f"warps 1  # {ESCAPES}"))
    outcome = run_cli(["inspect", "crafted.kpkg", "--color", "never"], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_OK)
    assert "\x1b" not in outcome.output and "\\x1b]0;owned" in outcome.output


class _CountingText(str):
    """Source text that counts how often it is split into lines."""

    splits = 0

    def split(self, sep: str | None = None, maxsplit: SupportsIndex = -1) -> list[str]:
        type(self).splits += 1
        return super().split(sep, maxsplit)


def test_text_rendering_is_linear_in_a_diagnostics_labels() -> None:
    """3 000 labels (one per role): each file is split into lines once, not once per label."""
    roles = 3000
    text = _CountingText("".join(f"    role r{i} warps 1\n" for i in range(roles)))
    sources = SourceMap()
    sources.add("roles.kc", text)
    labels = tuple(Label(Span("roles.kc", i + 1, 5, i + 1, 20), f"`r{i}`", primary=i == 0) for i in range(roles))
    rendered = render_text([Diagnostic("L-WARPS", "too many warps", labels=labels)], sources, color=False)
    assert _CountingText.splits <= 1
    assert rendered.count("\n") > 2 * roles


# ----------------------------------------------------------------- 10. outputs independent of the cwd


@pytest.mark.toolchain
def test_link_outputs_are_the_same_from_every_cwd(tmp_path: Path) -> None:
    """link.json and link.map name files relative to the pipeline file, whatever directory
    kernlink runs from (the role spans of the placement included)."""
    project = tmp_path / "project"
    shutil.copytree(BASE_PACKAGE.parent, project)
    outputs: list[tuple[bytes, bytes]] = []
    for cwd in (Path("/"), tmp_path, project):
        out = tmp_path / f"out{len(outputs)}"
        outcome = run_cli(["link", str(project / "pipeline.kp"), "-o", str(out), "--color", "never"], cwd=cwd)
        outcome.assert_clean(status=EXIT_OK, seconds=30)
        outputs.append(((out / "link.json").read_bytes(), (out / "link.map").read_bytes()))
    assert outputs[0] == outputs[1] == outputs[2]
    record = json.loads(outputs[0][0])
    assert record["pipeline_source"] == "pipeline.kp"
    assert b'"span": "loader.kpkg!contract.kc:' in outputs[0][0]
    assert str(tmp_path).lstrip("/").encode() not in outputs[0][0] + outputs[0][1]


def test_internal_errors_name_project_modules_not_install_paths() -> None:
    class Broken:
        code = "L-PAIR"

    try:
        raise ValueError("boom")
    except ValueError as exc:
        diag = _internal(Broken, exc)  # type: ignore[arg-type]
    assert diag.code == "E-INTERNAL"
    (where,) = (note for note in diag.notes if note.startswith("raised at"))
    assert where.startswith("raised at tests/hostile/test_hostile.py:") and str(REPO) not in where


# ----------------------------------------------------------------- 11. empty output paths


@pytest.mark.parametrize(
    "argv",
    [
        ["link", "p.kp", "-o", ""],
        ["check", "p.kp", "-o", ""],
        ["place", "p.kp", "--json", ""],
        ["pack", "a.cu", "--contract", "a.kc", "-o", ""],
    ],
    ids=["link", "check", "place", "pack"],
)
def test_an_empty_output_path_is_refused(tmp_path: Path, argv: list[str]) -> None:
    contract(tmp_path, stage())
    (tmp_path / "p.kp").write_text('pipeline "p" {\n    target sm_90a\n    use "demo.a" version ^1.0\n}\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    outcome = run_cli(argv, cwd=tmp_path)
    outcome.assert_clean(status=EXIT_USAGE)
    assert "an output path cannot be empty" in outcome.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_output_path_that_is_a_fifo_is_written_into_not_replaced(tmp_path: Path) -> None:
    """`-o /dev/null` or `-o /dev/stdout` must not replace the device with a regular file:
    shown with a FIFO (a device node is not safe to risk in a test)."""
    contract(tmp_path, stage("target sm_100a"))
    fifo = tmp_path / "report"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there: writing never blocks
    try:
        outcome = run_cli(["check", "a.kc", "--format", "json", "-o", str(fifo)], cwd=tmp_path, seconds=10)
        try:
            received = os.read(reader, 1 << 16)
        except BlockingIOError:
            received = b""
    finally:
        os.close(reader)
    outcome.assert_clean(status=EXIT_REJECTED)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(received)["diagnostics"][0]["code"] == "E-DUPLICATE"


def test_an_output_fifo_that_nobody_reads_is_e_io_not_a_hang(tmp_path: Path) -> None:
    contract(tmp_path, stage("target sm_100a"))
    fifo = tmp_path / "report"
    os.mkfifo(fifo)
    outcome = run_cli(["check", "a.kc", "--color", "never", "-o", str(fifo)], cwd=tmp_path, seconds=20)
    outcome.assert_clean(status=EXIT_USAGE)
    assert f"error[E-IO]: cannot write `{fifo}`: it is a FIFO that no process is reading" in outcome.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_the_placement_map_escapes_a_stage_name(tmp_path: Path) -> None:
    path = contract(tmp_path, stage("claim smem t bytes 1KiB", name=f"demo{ESCAPES}"))
    outcome = run_cli(["place", path.name, "--color", "never"], cwd=tmp_path)
    outcome.assert_clean(status=EXIT_OK)
    assert "\x1b" not in outcome.output and "demo\\x1b]0;owned" in outcome.output
