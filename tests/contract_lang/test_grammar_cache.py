"""The analysed grammar is cached per grammar and lark version; a damaged cache is rebuilt, never trusted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
from contract_lang.parser import _grammar_cache, parse_text
text = open({path!r}).read()
print(_grammar_cache())
print(repr(parse_text(text, "ring.kp", "pipeline")))
"""
RING = Path(__file__).resolve().parents[2] / "specs" / "examples" / "ring" / "ring.kp"


def _run(cache: Path, *, no_cache: bool = False) -> list[str]:
    env = {"KERNLINK_CACHE": str(cache), "PATH": "/usr/bin:/bin"}
    if no_cache:
        env["KERNLINK_NO_GRAMMAR_CACHE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(path=str(RING))],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stderr == ""
    return out.stdout.splitlines()


@pytest.mark.parametrize("damage", [b"", b"not a cache", b"0" * 64 + b"\n" + b"\x80garbage"])
def test_cache_is_used_and_damage_is_rebuilt(tmp_path: Path, damage: bytes) -> None:
    uncached = _run(tmp_path / "none", no_cache=True)
    assert uncached[0] == "None"
    first = _run(tmp_path)
    cache = Path(first[0])
    assert cache.parent == tmp_path and cache.stat().st_size > 0
    assert first[1] == uncached[1]
    cache.write_bytes(damage)
    assert _run(tmp_path)[1] == uncached[1]
    assert cache.stat().st_size > len(damage), "the damaged cache was rewritten"
