"""The counter hand-off runs on the GPU: blocks wait on each other's tiles through `kl_counters`.

Two launches in one module: the second sees counts from zero again only because the launch
helper zeroes the array (without the reset its waits would pass at once and its final counts
would be twice the grid).
"""

from __future__ import annotations

import json
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from kernlink.api import link
from runtime.launch import GpuSession
from runtime.run import LinkedKernel, run_linked
from tests.moe.test_counters import build_handoff

pytestmark = pytest.mark.gpu


def expected(tiles: int, grid: int) -> list[int]:
    out = [0] * (tiles * grid * 32 + 2 * grid)
    for k in range(tiles):
        for b in range(grid):
            nxt = (b + 1) % grid
            for lane in range(32):
                out[(k * grid + b) * 32 + lane] = 1000 * k + 10 * nxt + lane
    for b in range(grid):
        out[tiles * grid * 32 + 2 * b] = grid  # slot tiles-1 holds one add per block
        out[tiles * grid * 32 + 2 * b + 1] = 0  # the counter's index in the array
    return out


@pytest.mark.parametrize("grid", [8, 132])
def test_the_counter_hand_off_runs_twice_with_a_reset_between(tmp_path: Path, grid: int) -> None:
    assert link([build_handoff(tmp_path)], tmp_path / "out").ok
    kernel = LinkedKernel.load(tmp_path / "out")
    tiles = 4
    with GpuSession() as gpu:
        for _ in range(2):
            data, out = gpu.alloc(tiles * grid * 32 * 4), gpu.alloc((tiles * grid * 32 + 2 * grid) * 4)
            run_linked(kernel, gpu=gpu, grid=grid, values={"data": data, "out": out, "tiles": tiles})
            assert array("I", gpu.download(out)).tolist() == expected(tiles, grid)


def test_a_consumer_that_waits_for_one_add_too_many_is_decoded_by_the_watchdog(tmp_path: Path) -> None:
    """The consumer compiled a stale count (grid + 1): the watched wait traps and `kernlink run` names it.

    Runs in a subprocess: a trap leaves the process's primary context unusable.
    """
    stale = {"ready_counter_wait(k, gridDim.x * params->adds)": "ready_counter_wait(k, gridDim.x * params->adds + 1)"}
    pipeline = build_handoff(tmp_path, {"cons.cu": stale})
    assert link([pipeline], tmp_path / "out", watchdog=20_000_000).ok
    grid, tiles = 8, 4
    args = {
        "grid": grid,
        "values": {"tiles": tiles},
        "buffers": {"data": {"bytes": tiles * grid * 128}, "out": {"bytes": tiles * grid * 128 + 8 * grid}},
    }
    (tmp_path / "args.json").write_text(json.dumps(args))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernlink",
            "run",
            str(tmp_path / "out"),
            "--args",
            str(tmp_path / "args.json"),
            "--color",
            "never",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    assert "error[E-HANG]" in text and f"waits for >= {grid + 1}, last saw {grid}" in text, text
    # one stuck wait, one diagnostic (the blocks the trap let record are listed in it)
    assert text.count("error[") == 1 and "the trap ended the launch" in text, text
    assert "role `cons` of `hand.cons`" in text and "contract.kc:11" in text, text
