"""The tutorials' commands run as written (specs/tutorial/): each page's ``sh`` blocks in order, from
the root of a sandbox holding a copy of ``specs/`` (examples without their build outputs), with
``kernlink`` on the PATH. ``<!-- exit N -->`` before a block: it must exit N (``<!-- exit N: TEXT -->``:
and print TEXT); ``<!-- gpu -->``: it needs a GPU and is skipped without one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "specs" / "tutorial"
PAGES = sorted(p.name for p in TUTORIAL.glob("*.md") if p.name != "README.md")

_BLOCK = re.compile(r"(?:<!-- (exit \d+|gpu)(?:: (.+?))? -->\n)?```sh\n(.*?)```", re.S)

pytestmark = pytest.mark.toolchain


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    script: str
    exit: int = 0
    gpu: bool = False
    prints: str = ""


def blocks(page: Path) -> list[Block]:
    """The ``sh`` blocks of a page, with what each expects."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _BLOCK.finditer(text):
        mark = m.group(1) or ""
        line = text.count("\n", 0, m.start(3))
        code = int(mark.split()[1]) if mark.startswith("exit") else 0
        out.append(Block(page.name, line, m.group(3), code, mark == "gpu", m.group(2) or ""))
    return out


def _sandbox(root: Path) -> dict[str, str]:
    """A copy of specs/ under ``root`` and the environment the blocks run with (``kernlink`` on the PATH)."""
    shutil.copytree(ROOT / "specs", root / "specs", ignore=shutil.ignore_patterns("build", "out", "__pycache__"))
    bin_dir = root / ".bin"
    bin_dir.mkdir()
    launcher = bin_dir / "kernlink"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kernlink "$@"\n')
    launcher.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERNLINK_RUNTIME_DIR")}
    env.update(PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}", PYTHONPATH=str(ROOT), NO_COLOR="1")
    return env


def _gpu() -> bool:
    from runtime.launch import gpu_available

    return gpu_available()


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_commands_run_as_written(page: str, tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    found = blocks(TUTORIAL / page)
    assert found, f"{page} has no commands"
    for block in found:
        if block.gpu and not _gpu():
            continue
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == block.exit, (
            f"{page}:{block.line}: exit {done.returncode}, expected {block.exit}\n{block.script}\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
        assert block.prints in done.stdout, f"{page}:{block.line}: no `{block.prints}` in\n{done.stdout[-4000:]}"


def test_the_index_lists_every_page() -> None:
    index = (TUTORIAL / "README.md").read_text(encoding="utf-8")
    assert sorted(re.findall(r"\]\(([\w-]+\.md)\)", index)) == sorted({*PAGES})


def test_a_block_that_fails_fails_the_page(tmp_path: Path) -> None:
    page = tmp_path / "x.md"
    page.write_text("<!-- exit 1 -->\n```sh\nfalse\n```\n\n```sh\ntrue\n```\n\n<!-- gpu -->\n```sh\nrun\n```\n")
    assert [(b.exit, b.gpu, b.script) for b in blocks(page)] == [
        (1, False, "false\n"),
        (0, False, "true\n"),
        (0, True, "run\n"),
    ]
