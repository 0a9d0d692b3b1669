"""Private folders (the cache, the build server's sockets) and the sealed entries kept in them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnostics.files import user_cache_dir
from diagnostics.model import DiagnosticError
from diagnostics.private import KEY, NotPrivate, private_folder, read_sealed, write_sealed

ROOT = Path(__file__).resolve().parents[2]
ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="making a folder another uid owns needs root")


@pytest.fixture
def umask_002() -> Iterator[None]:
    before = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(before)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_a_new_folder_is_private_whatever_the_umask(tmp_path: Path, umask_002: None) -> None:
    folder = private_folder(tmp_path / "a" / "cache")
    assert _mode(folder) == 0o700
    assert private_folder(folder) == folder


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (lambda p: (p.mkdir(), p.chmod(0o755)), "others may enter it: mode 0755"),
        (lambda p: (p.mkdir(), p.chmod(0o770)), "others may enter it: mode 0770"),
        (lambda p: (p.with_name("real").mkdir(mode=0o700), p.symlink_to(p.with_name("real"))), "a symbolic link"),
    ],
    ids=["0755", "0770", "symlink"],
)
def test_a_folder_others_can_enter_or_redirect_is_refused(tmp_path: Path, setup: object, reason: str) -> None:
    folder = tmp_path / "cache"
    setup(folder)  # type: ignore[operator]
    with pytest.raises(NotPrivate, match=reason):
        private_folder(folder)


@ROOT_ONLY
def test_a_folder_of_another_uid_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 12345, 12345)
    with pytest.raises(NotPrivate, match="it belongs to uid 12345"):
        private_folder(folder)


def test_the_default_cache_folder_of_an_older_kernlink_is_tightened_unless_others_could_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERNLINK_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    default = tmp_path / "kernlink"
    default.mkdir()
    default.chmod(0o755)  # what a 0022 umask made: no one else could write in it
    assert user_cache_dir() == default and _mode(default) == 0o700
    default.chmod(0o775)  # a 0002 umask: the group could have planted entries
    with pytest.raises(DiagnosticError) as err:
        user_cache_dir()
    [diag] = err.value.diagnostics
    assert diag.code == "E-IO" and f"`{default}`" in diag.message and "mode 0775" in diag.message


def test_a_given_cache_folder_others_can_enter_is_refused_not_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = tmp_path / "mine"
    given.mkdir()
    given.chmod(0o755)
    monkeypatch.setenv("KERNLINK_CACHE", str(given))
    with pytest.raises(DiagnosticError, match="refusing the cache folder"):
        user_cache_dir()
    assert _mode(given) == 0o755


def test_no_writable_home_falls_back_to_a_private_temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNLINK_CACHE", raising=False)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    folder = user_cache_dir()
    assert folder == tmp_path / f"kernlink-cache-{os.getuid()}" and _mode(folder) == 0o700


@ROOT_ONLY
@pytest.mark.parametrize("verb", ["check", "link"])
def test_check_and_link_refuse_a_cache_folder_of_another_uid_with_exit_2(tmp_path: Path, verb: str) -> None:
    """The attack of issue 32: root used a `KERNLINK_CACHE` another uid owned, and ran that uid's code."""
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 12345, 12345)
    args = ["-o", str(tmp_path / "out")] if verb == "link" else []
    done = subprocess.run(
        [sys.executable, "-m", "kernlink", verb, "specs/examples/hello/hello.kp", *args, "--color", "never"],
        cwd=ROOT,
        env={**os.environ, "KERNLINK_CACHE": str(theirs)},
        capture_output=True,
        text=True,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert f"error[E-IO]: refusing the cache folder `{theirs}`" in out and "uid 12345" in out
    assert "Traceback" not in out and list(theirs.iterdir()) == []


# ----------------------------------------------------------------- sealed entries


def test_a_sealed_entry_reads_back_only_as_written(tmp_path: Path) -> None:
    folder = private_folder(tmp_path / "c")
    assert write_sealed(folder, "a.bin", b"payload")
    assert read_sealed(folder, "a.bin") == b"payload"
    assert _mode(folder / "a.bin") == 0o600 and _mode(folder / KEY) == 0o600
    whole = (folder / "a.bin").read_bytes()
    (folder / "a.bin").write_bytes(whole[:-1])
    assert read_sealed(folder, "a.bin") is None, "truncated"
    (folder / "a.bin").write_bytes(whole[:-7] + b"PAYLOAD")
    assert read_sealed(folder, "a.bin") is None, "changed"
    (folder / "b.bin").write_bytes(whole)
    assert read_sealed(folder, "b.bin") is None, "another entry's bytes under this name"
    assert read_sealed(folder, "absent.bin") is None


def test_a_key_that_is_not_this_users_secret_is_replaced(tmp_path: Path) -> None:
    folder = private_folder(tmp_path / "c")
    assert write_sealed(folder, "a.bin", b"payload")
    (folder / KEY).chmod(0o644)
    assert read_sealed(folder, "a.bin") is None
    assert _mode(folder / KEY) == 0o600
    assert write_sealed(folder, "a.bin", b"again") and read_sealed(folder, "a.bin") == b"again"
    (folder / KEY).unlink()
    (folder / KEY).symlink_to(folder / "a.bin")
    assert read_sealed(folder, "a.bin") is None and not (folder / KEY).is_symlink()
