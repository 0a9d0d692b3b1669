"""Timing statistics and the output check (CPU), and the interleaved timing itself (GPU)."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnostics.model import DiagnosticError
from kernlink.cli import main
from kernlink.parity_timing import ORDERS, _same_outputs, bootstrap_median, ratios
from tests.link.examples import floats, hello_reference


def test_every_build_takes_every_position_equally_often() -> None:
    assert len(ORDERS) == 6
    for position in range(3):
        assert sorted(order[position] for order in ORDERS) == [0, 0, 1, 1, 2, 2]


def test_ratios_per_round() -> None:
    assert ratios([[2.0, 1.0, 3.0], [1.0, 1.0, 1.0]]) == ([2.0, 1.0], [1.5, 1.0])


@given(st.lists(st.floats(min_value=0.5, max_value=2.0), min_size=1, max_size=40), st.integers(0, 5))
def test_the_bootstrap_interval_holds_the_median_and_is_deterministic(samples: list[float], seed: int) -> None:
    got = bootstrap_median(samples, seed=seed, draws=200)
    assert min(samples) <= got.low <= got.median <= got.high <= max(samples)
    assert got == bootstrap_median(samples, seed=seed, draws=200)


def test_equal_samples_give_a_point_interval() -> None:
    got = bootstrap_median([1.0] * 9, draws=100)
    assert (got.median, got.low, got.high) == (1.0, 1.0, 1.0)


def test_different_outputs_refuse_a_ratio() -> None:
    same = {"data": b"\x00\x01\x02", "out": b"\x05"}
    _same_outputs([same, dict(same), dict(same)])
    with pytest.raises(DiagnosticError) as err:
        _same_outputs([same, {"data": b"\x00\x01\x03", "out": b"\x05"}, dict(same)])
    [diag] = err.value.diagnostics
    assert diag.code == "E-PARITY" and "`data`" in diag.message and "no timing ratio" in diag.message
    assert "first differs at byte 2" in diag.notes[0] and len(diag.notes) == 2
    with pytest.raises(DiagnosticError) as err:
        _same_outputs([same, {**same, "out": b"\x06"}, {**same, "out": b"\x07"}])
    assert "not deterministic" in err.value.diagnostics[0].notes[-1]


@pytest.mark.gpu
@pytest.mark.toolchain
def test_hello_times_against_its_control(compositions: dict[str, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = floats(1000, seed=3)
    (tmp_path / "data.bin").write_bytes(data.tobytes())
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"grid": 4, "values": {"n": 1000},
                                "buffers": {"data": {"input": "data.bin", "output": "out.bin"}}}))
    out = tmp_path / "out"
    assert main(["parity", str(compositions["hello"]), "-o", str(out), "--args", str(args), "--rounds", "12",
                 "--warmup", "2", "--reps", "3", "--format", "json"]) == 0
    timing = json.loads(capsys.readouterr().out)["timing"]
    assert timing["rounds"] == 12 and timing["grid"] == 4
    for key in ("ratio", "null"):
        assert 0.5 < timing[key]["low"] <= timing[key]["median"] <= timing[key]["high"] < 2.0
    assert json.loads((out / "parity.json").read_text())["timing"] == timing
    assert array("f", (tmp_path / "out.bin").read_bytes()).tolist() == hello_reference(data, 1000)
