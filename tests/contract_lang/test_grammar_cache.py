"""The analysed grammar is cached per grammar and lark version, as sealed JSON: nothing in the cache runs code,
and a damaged, planted or forged entry is rebuilt, never trusted."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from diagnostics.private import read_sealed

ROOT = Path(__file__).resolve().parents[2]
RING = ROOT / "specs" / "examples" / "ring" / "ring.kp"
SCRIPT = """
from contract_lang.parser import _grammar_cache, parse_text
text = open({path!r}).read()
cache = _grammar_cache()
print(cache and cache[0] / cache[1])
print(repr(parse_text(text, "ring.kp", "pipeline")))
"""


def _run(cache: Path, *, no_cache: bool = False, umask: int | None = None) -> list[str]:
    env = {"KERNLINK_CACHE": str(cache), "PATH": "/usr/bin:/bin"}
    if no_cache:
        env["KERNLINK_NO_GRAMMAR_CACHE"] = "1"
    command = [sys.executable, "-c", SCRIPT.format(path=str(RING))]
    if umask is not None:
        command = ["sh", "-c", f'umask {umask:03o} && exec "$0" "$@"', *command]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=ROOT)
    assert out.stderr == ""
    return out.stdout.splitlines()


@pytest.fixture(scope="module")
def uncached(tmp_path_factory: pytest.TempPathFactory) -> str:
    lines = _run(tmp_path_factory.mktemp("none"), no_cache=True)
    assert lines[0] == "None"
    return lines[1]


@pytest.mark.parametrize("damage", [b"", b"not a cache", b"kernlink-sealed/1\n" + b"0" * 32 + b"{}"])
def test_cache_is_used_and_damage_is_rebuilt(tmp_path: Path, damage: bytes, uncached: str) -> None:
    first = _run(tmp_path)
    cache = Path(first[0])
    assert cache.parent == tmp_path and cache.suffix == ".json" and first[1] == uncached
    assert json.loads(read_sealed(tmp_path, cache.name) or b"null") is not None
    cache.write_bytes(damage)
    assert _run(tmp_path)[1] == uncached
    assert read_sealed(tmp_path, cache.name) is not None, "the damaged cache was rewritten, sealed"


def test_a_truncated_entry_is_rebuilt(tmp_path: Path, uncached: str) -> None:
    cache = Path(_run(tmp_path)[0])
    whole = cache.read_bytes()
    cache.write_bytes(whole[: len(whole) // 2])
    assert read_sealed(tmp_path, cache.name) is None
    assert _run(tmp_path)[1] == uncached
    assert read_sealed(tmp_path, cache.name) is not None


def test_a_planted_pickle_never_runs(tmp_path: Path, uncached: str) -> None:
    """The attack of issue 32: a pickle in the cache folder ran a command inside `kernlink check`."""
    ran = tmp_path / "ran"

    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {ran}",))

    payload = pickle.dumps(Boom())
    name = Path(_run(tmp_path)[0]).name
    subprocess.run(  # lark's own cache file (what kernlink used to keep): a hash line, then pickles
        [
            sys.executable,
            "-c",
            "import sys; from lark import Lark; "
            "Lark.open('contract_lang/grammar.lark', parser='lalr', lexer='contextual', propagate_positions=True,"
            " strict=True, maybe_placeholders=True, cache=sys.argv[1])",
            str(tmp_path / "lark.cache"),
        ],
        cwd=ROOT,
        check=True,
    )
    header = (tmp_path / "lark.cache").read_bytes().split(b"\n", 1)[0]
    stem = name.removesuffix(".json")
    for planted in (tmp_path / name, tmp_path / f"{stem}.lark-cache"):
        planted.write_bytes(header + b"\n" + payload + payload)
    sealed_pickle = b"kernlink-sealed/1\n" + b"\0" * 32 + payload
    (tmp_path / "other.json").write_bytes(sealed_pickle)
    assert _run(tmp_path)[1] == uncached
    assert not ran.exists(), "a planted pickle ran"
    assert read_sealed(tmp_path, name) is not None


def test_a_forged_grammar_is_not_used(tmp_path: Path, uncached: str) -> None:
    """An entry with another grammar (it would parse another language) under a tag of another key is rebuilt."""
    cache = Path(_run(tmp_path)[0])
    data = read_sealed(tmp_path, cache.name)
    assert data is not None
    forged = data.replace(b'"pipeline"', b'"pipelinx"')
    assert forged != data
    (tmp_path / "key").write_bytes(b"k" * 32)  # the attacker's key: not this user's 0600 secret
    (tmp_path / "key").chmod(0o644)
    from diagnostics.private import _tag

    cache.write_bytes(b"kernlink-sealed/1\n" + _tag(b"k" * 32, cache.name, forged) + forged)
    assert _run(tmp_path)[1] == uncached
    rebuilt = read_sealed(tmp_path, cache.name)
    assert rebuilt is not None and b'"pipelinx"' not in rebuilt


def test_the_cache_is_created_private_under_a_group_writable_umask(tmp_path: Path, uncached: str) -> None:
    folder = tmp_path / "fresh" / "cache"
    cache = Path(_run(folder, umask=0o002)[0])
    assert (folder.stat().st_mode & 0o777, cache.stat().st_mode & 0o777) == (0o700, 0o600)
    assert ((folder / "key").stat().st_mode & 0o777) == 0o600
