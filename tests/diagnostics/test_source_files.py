"""read_source and the atomic writers: every failure is a diagnostic, never a partial file."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from diagnostics import (
    Diagnostic,
    DiagnosticError,
    Span,
    atomic_write_bytes,
    atomic_write_text,
    read_source,
)


def only_diagnostic(excinfo: pytest.ExceptionInfo[DiagnosticError]) -> Diagnostic:
    (diag,) = excinfo.value.diagnostics
    return diag


def test_reads_utf8_and_normalises_crlf(tmp_path: Path) -> None:
    path = tmp_path / "a.kc"
    path.write_bytes(b"stage a {\r\n  warps 4 \xe2\x80\x94 ok\r\n}\r\n")
    assert read_source(path) == "stage a {\n  warps 4 — ok\n}\n"


def test_strips_a_utf8_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.kc"
    path.write_bytes(b"\xef\xbb\xbfstage a\n")
    assert read_source(path) == "stage a\n"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.kc"
    with pytest.raises(DiagnosticError) as excinfo:
        read_source(path, display="specs/missing.kc")
    diag = only_diagnostic(excinfo)
    assert diag.code == "E-IO"
    assert diag.message == "cannot read `specs/missing.kc`: No such file or directory"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError) as excinfo:
        read_source(tmp_path)
    diag = only_diagnostic(excinfo)
    assert diag.code == "E-IO"
    assert diag.message == f"cannot read `{tmp_path}`: Is a directory"


def test_binary_file_points_at_the_nul_byte(tmp_path: Path) -> None:
    path = tmp_path / "obj.kc"
    path.write_bytes(b"ELF\nab\0cd")
    with pytest.raises(DiagnosticError) as excinfo:
        read_source(path, display="obj.kc")
    diag = only_diagnostic(excinfo)
    assert diag.code == "E-BINARY"
    assert diag.message == "`obj.kc` is a binary file, not text"
    assert diag.primary is not None and diag.primary.span == Span.point("obj.kc", 2, 3)


def test_non_utf8_points_at_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.kc"
    path.write_bytes("stage a {\r\n  fact é = 1\n".encode() + b"  fact caf\xe9 = 2\n")
    with pytest.raises(DiagnosticError) as excinfo:
        read_source(path, display="latin1.kc")
    diag = only_diagnostic(excinfo)
    assert diag.code == "E-ENCODING"
    assert diag.message == "`latin1.kc` is not valid UTF-8: byte 0xE9 at 3:11"
    assert diag.primary is not None and diag.primary.span == Span.point("latin1.kc", 3, 11)
    assert "0xE9" in diag.primary.text


def test_bad_byte_after_multibyte_characters_counts_characters(tmp_path: Path) -> None:
    path = tmp_path / "mixed.kc"
    path.write_bytes("名前".encode() + b"\xff")
    with pytest.raises(DiagnosticError) as excinfo:
        read_source(path)
    assert only_diagnostic(excinfo).message.endswith("byte 0xFF at 1:3")


def test_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.kc"
    path.write_bytes(b"x" * 2048)
    with pytest.raises(DiagnosticError) as excinfo:
        read_source(path, limit=1024, display="big.kc")
    diag = only_diagnostic(excinfo)
    assert diag.code == "E-TOO-LARGE"
    assert diag.message == "`big.kc` is too large: 2048 bytes, over the limit of 1024 bytes"


def test_exactly_at_the_limit_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "edge.kc"
    path.write_bytes(b"y" * 1024)
    assert read_source(path, limit=1024) == "y" * 1024


def test_atomic_write_creates_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    atomic_write_text(path, "first\n")
    assert path.read_text(encoding="utf-8") == "first\n"
    os.chmod(path, 0o640)
    atomic_write_bytes(path, b"second\n")
    assert path.read_bytes() == b"second\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_new_files_get_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "fresh.txt", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "fresh.txt").stat().st_mode) == 0o644


def _fail_fsync(fd: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_failed_write_leaves_no_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fsync", _fail_fsync)
    with pytest.raises(DiagnosticError) as excinfo:
        atomic_write_bytes(tmp_path / "kernel.cubin", b"\x7fELF" * 1000)
    diag = only_diagnostic(excinfo)
    assert diag.code == "E-IO"
    assert diag.message == f"cannot write `{tmp_path / 'kernel.cubin'}`: No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "map.txt"
    path.write_text("old\n", encoding="utf-8")
    monkeypatch.setattr(os, "fsync", _fail_fsync)
    with pytest.raises(DiagnosticError):
        atomic_write_text(path, "new\n")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["map.txt"]


def test_failed_rename_over_a_directory_leaves_no_temp(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(DiagnosticError) as excinfo:
        atomic_write_text(tmp_path / "out", "x")
    assert only_diagnostic(excinfo).code == "E-IO"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert list((tmp_path / "out").iterdir()) == []


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError) as excinfo:
        atomic_write_text(tmp_path / "no" / "such" / "out.txt", "x")
    diag = only_diagnostic(excinfo)
    assert diag.code == "E-IO"
    assert diag.message.endswith(": No such file or directory")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_removes_the_temp_and_reraises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(tmp_path / "out.txt", "x")
    assert list(tmp_path.iterdir()) == []
