"""Timing statistics and the output check (CPU), and the interleaved timing itself (GPU)."""

from __future__ import annotations

import json
import struct
from array import array
from pathlib import Path
from types import SimpleNamespace

import pytest
from cuda.bindings import driver
from hypothesis import given
from hypothesis import strategies as st

from diagnostics.model import DiagnosticError
from kernlink.cli import main
from linker.launch_config import Launch
from runtime import parity_timing
from runtime.launch import DeviceBuffer, Kernel
from runtime.parity_timing import ORDERS, _same_outputs, bootstrap_median, ratios
from tests.link.examples import f32, floats, hello_reference


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
def test_hello_times_against_its_control(
    compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = floats(1000, seed=3)
    (tmp_path / "data.bin").write_bytes(data.tobytes())
    args = tmp_path / "args.json"
    args.write_text(
        json.dumps({"grid": 4, "values": {"n": 1000}, "buffers": {"data": {"input": "data.bin", "output": "out.bin"}}})
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "parity",
                str(compositions["hello"]),
                "-o",
                str(out),
                "--args",
                str(args),
                "--rounds",
                "12",
                "--warmup",
                "2",
                "--reps",
                "3",
                "--format",
                "json",
            ]
        )
        == 0
    )
    timing = json.loads(capsys.readouterr().out)["timing"]
    assert timing["rounds"] == 12 and timing["grid"] == 4
    for key in ("ratio", "null"):
        assert 0.5 < timing[key]["low"] <= timing[key]["median"] <= timing[key]["high"] < 2.0
    assert json.loads((out / "parity.json").read_text())["timing"] == timing
    assert array("f", (tmp_path / "out.bin").read_bytes()).tolist() == hello_reference(data, 1000)


class _FakeGpu:
    """A GPU in Python: `hello` kernels run `data[i] = 3 * data[i] + 3`; the control may be made to differ."""

    control_differs = False

    def __init__(self) -> None:
        self.memory: dict[int, bytearray] = {}
        self.modules = 0

    def __enter__(self) -> _FakeGpu:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def load(self, cubin: bytes) -> SimpleNamespace:
        self.modules += 1
        index = self.modules
        return SimpleNamespace(kernel=lambda name: Kernel(name, index, None))

    def alloc(self, nbytes: int) -> DeviceBuffer:
        ptr = 4096 * (len(self.memory) + 1)
        self.memory[ptr] = bytearray(nbytes)
        return DeviceBuffer(ptr, nbytes)

    def upload(self, data: bytes) -> DeviceBuffer:
        buf = self.alloc(len(data))
        self.memory[buf.ptr][:] = data
        return buf

    def download(self, buf: DeviceBuffer) -> bytes:
        return bytes(self.memory[buf.ptr])

    sms = 132

    def run(self, kernel: Kernel, plan: Launch, args: list[bytes]) -> None:
        assert plan.grid == (2, 1, 1) and plan.cluster is None
        ptr, n = struct.unpack_from("<QI", args[0])
        data = array("f", self.memory[ptr][: 4 * n])
        bump = 4.0 if self.control_differs and kernel.function == 2 else 3.0
        self.memory[ptr][: 4 * n] = array("f", [f32(f32(3.0 * x) + bump) for x in data]).tobytes()

    def synchronize(self) -> None:
        return None


def _fake_driver(monkeypatch: pytest.MonkeyPatch, launched: list[object]) -> None:
    ok = driver.CUresult.CUDA_SUCCESS
    monkeypatch.setattr(driver, "cuFuncSetAttribute", lambda *a: (ok,))
    monkeypatch.setattr(driver, "cuLaunchKernelEx", lambda config, function, *a: (launched.append(function), (ok,))[1])
    monkeypatch.setattr(driver, "cuEventCreate", lambda flags: (ok, object()))
    monkeypatch.setattr(driver, "cuEventDestroy", lambda event: (ok,))
    monkeypatch.setattr(driver, "cuEventRecord", lambda event, stream: (ok,))
    monkeypatch.setattr(driver, "cuEventSynchronize", lambda event: (ok,))
    monkeypatch.setattr(driver, "cuEventElapsedTime", lambda a, b: (ok, 2.0))
    monkeypatch.setattr(driver, "cuCtxGetDevice", lambda: (ok, 0))
    monkeypatch.setattr(driver, "cuDeviceGetName", lambda length, device: (ok, b"Fake GPU\0"))


@pytest.mark.toolchain
@pytest.mark.parametrize("differs", [False, True])
def test_the_timing_loop_on_a_fake_gpu(
    differs: bool,
    compositions: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The whole `--args` path without a GPU: outputs checked, rounds interleaved, report written."""
    launched: list[object] = []
    _fake_driver(monkeypatch, launched)
    monkeypatch.setattr(_FakeGpu, "control_differs", differs)
    monkeypatch.setattr(parity_timing, "GpuSession", _FakeGpu)
    data = floats(40, seed=5)
    (tmp_path / "data.bin").write_bytes(data.tobytes())
    args = tmp_path / "args.json"
    args.write_text(
        json.dumps({"grid": 2, "values": {"n": 40}, "buffers": {"data": {"input": "data.bin", "output": "out.bin"}}})
    )
    out = tmp_path / "out"
    code = main(
        [
            "parity",
            str(compositions["hello"]),
            "-o",
            str(out),
            "--args",
            str(args),
            "--rounds",
            "7",
            "--warmup",
            "2",
            "--reps",
            "4",
            "--no-sass",
            "--format",
            "json",
        ]
    )
    said = json.loads(capsys.readouterr().out)
    assert array("f", (tmp_path / "out.bin").read_bytes()).tolist() == hello_reference(data, 40)
    if differs:
        assert code == 1 and "timing" not in said and launched == []
        [diag] = said["diagnostics"]
        assert diag["code"] == "E-PARITY" and "no timing ratio" in diag["message"]
        return
    assert code == 0 and said["proved"] is True
    timing = said["timing"]
    assert timing["ms"] == {"linked": 0.5, "control": 0.5, "null": 0.5} and timing["device"] == "Fake GPU"
    assert timing["ratio"] == {"median": 1.0, "low": 1.0, "high": 1.0} == timing["null"]
    # warm-ups, then 7 rounds of 4 launches of each of the three modules, in rotating order
    assert launched[:6] == [1, 1, 2, 2, 3, 3] and len(launched) == 6 + 7 * 3 * 4
    firsts = [launched[6 + 12 * r] for r in range(7)]
    assert sorted(set(firsts)) == [1, 2, 3]
    assert json.loads((out / "parity.json").read_text())["timing"] == timing


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("buffers", "says"),
    [
        ({"data": {"input": "missing.bin"}}, "cannot read a buffer of"),
        ({"data": {"bytes": "lots"}}, "has a malformed buffer"),
    ],
)
def test_a_bad_args_file_is_a_diagnostic(
    buffers: dict[str, object],
    says: str,
    compositions: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _fake_driver(monkeypatch, [])
    monkeypatch.setattr(parity_timing, "GpuSession", _FakeGpu)
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"grid": 1, "values": {"n": 4}, "buffers": buffers}))
    assert (
        main(
            [
                "parity",
                str(compositions["hello"]),
                "-o",
                str(tmp_path / "out"),
                "--args",
                str(args),
                "--no-sass",
                "--color",
                "never",
            ]
        )
        == 1
    )
    said = capsys.readouterr().out
    assert "error[E-RUN]" in said and says in said and "Traceback" not in said
    assert said.rstrip().splitlines()[-1].startswith("not proved: E-RUN")
