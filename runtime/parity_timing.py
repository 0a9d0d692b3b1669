"""Timing of a linked kernel against its one-unit control on a GPU (`kernlink parity --args`).

Three modules are loaded: the linked cubin (L), the control cubin (C) and the linked
cubin a second time (N, the null comparison: any ratio it shows is noise). Each is run
once on fresh buffers made from the args file; every buffer (inputs too: kernels may
write in place) is downloaded and compared bit for bit with L's (the args file's
``output`` files receive L's). When C's differ, no
ratio is reported (``E-PARITY``): a faster kernel that computes something else proves
nothing. Then each is launched ``warmup`` times, and ``rounds`` rounds follow; a round
times ``reps`` back-to-back launches of each module between two CUDA events, the three
in one of the six orders (round ``i`` takes order ``i mod 6``, so each module is first,
middle and last equally often: interleaved ABAB…, never all of one then all of the
other). Per round: ratio = L / C and null = N / L. Reported: the median ratio and a 95 %
bootstrap interval of the median (resampling rounds; a fixed seed, so the same samples
give the same interval), beside the same for the null.
"""

from __future__ import annotations

import ctypes
import itertools
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from linker.launch_config import Launch
from runtime.launch import DeviceBuffer, GpuSession, Kernel, driver_config, enqueue, prepare
from runtime.run import LinkedKernel, Value, make_buffers, params_block

ORDERS = tuple(itertools.permutations(range(3)))
BOOTSTRAP_SAMPLES = 2000
NAMES = ("linked", "control", "null")


@dataclass(frozen=True)
class Interval:
    median: float
    low: float
    high: float


@dataclass(frozen=True)
class Timing:
    rounds: int
    warmup: int
    reps: int
    grid: int
    ms: Mapping[str, float]  # median ms per launch: linked, control, null
    ratio: Interval  # linked / control
    null: Interval  # null / linked
    device: str

    def as_json(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "warmup": self.warmup,
            "reps": self.reps,
            "grid": self.grid,
            "device": self.device,
            "ms": dict(self.ms),
            "ratio": vars(self.ratio),
            "null": vars(self.null),
        }


def bootstrap_median(
    samples: Sequence[float], *, seed: int = 0, draws: int = BOOTSTRAP_SAMPLES, level: float = 0.95
) -> Interval:
    """The median of ``samples`` and a percentile bootstrap interval of it (deterministic for a seed)."""
    if not samples:
        raise ValueError("no samples")
    rng = random.Random(seed)
    n = len(samples)
    medians = sorted(statistics.median(rng.choices(samples, k=n)) for _ in range(draws))
    tail = (1.0 - level) / 2.0
    low = medians[int(tail * (draws - 1))]
    high = medians[int((1.0 - tail) * (draws - 1) + 0.5)]
    return Interval(statistics.median(samples), low, high)


def ratios(times: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """Per round (linked, control, null) times → (linked / control, null / linked)."""
    return [t[0] / t[1] for t in times], [t[2] / t[0] for t in times]


def time_parity(
    link_dir: Path,
    control_cubin: bytes,
    args_file: Path,
    *,
    rounds: int,
    warmup: int,
    reps: int,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> Timing:
    """Check outputs bit for bit, then time linked, control and null interleaved (module docstring).

    Raises ``DiagnosticError``: ``E-PARITY`` when the control's outputs differ, ``E-RUN``
    / ``E-CUDA`` for the inputs and the driver.
    """
    linked = LinkedKernel.load(link_dir)
    spec = _spec(args_file)
    cubins = (linked.cubin, control_cubin, linked.cubin)
    with GpuSession() as gpu:
        kernels = [gpu.load(c).kernel(linked.kernel) for c in cubins]
        plan = linked.plan(None if spec.get("grid") is None else int(spec["grid"]), gpu.sms)
        grid = plan.grid[0]
        outputs = []
        for index, kernel in enumerate(kernels):
            values, files = _buffers(gpu, spec, args_file)
            block = params_block(linked.map, values)
            gpu.run(kernel, plan, [block] if block else [])
            outputs.append({name: gpu.download(v) for name, v in sorted(values.items()) if isinstance(v, DeviceBuffer)})
            if index == 0:  # the args file's `output` files get the linked kernel's results
                for buffer, path in files:
                    path.write_bytes(gpu.download(buffer))
        _same_outputs(outputs)
        values, _ = _buffers(gpu, spec, args_file)
        block = params_block(linked.map, values)
        launches = [_Prepared(kernel, plan, block) for kernel in kernels]
        for launch in launches:
            for _ in range(warmup):
                launch()
        gpu.synchronize()
        times: list[list[float]] = []
        with _Events() as events:
            for i in range(rounds):
                row = [0.0, 0.0, 0.0]
                for index in ORDERS[i % len(ORDERS)]:
                    events.start()
                    for _ in range(reps):
                        launches[index]()
                    row[index] = events.stop() / reps
                times.append(row)
                if progress is not None:
                    progress(i + 1)
        gpu.synchronize()
        device = _device_name()
    ratio, null = ratios(times)
    ms = {name: statistics.median(t[i] for t in times) for i, name in enumerate(NAMES)}
    return Timing(
        rounds,
        warmup,
        reps,
        grid,
        ms,
        bootstrap_median(ratio, seed=seed),
        bootstrap_median(null, seed=seed + 1),
        device,
    )


def _spec(args_file: Path) -> Mapping[str, Any]:
    import json

    try:
        spec = json.loads(args_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_RUN,
                    f"cannot read `{args_file}`: {err}",
                    helps=("give a JSON file of `grid`, `values`, `buffers` (as `kernlink run --args` takes)",),
                )
            ]
        ) from err
    if not isinstance(spec, dict):
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_RUN,
                    f"`{args_file}` is not a JSON object",
                    helps=("give a JSON object of `grid`, `values`, `buffers`",),
                )
            ]
        )
    return spec


def _buffers(
    gpu: GpuSession, spec: Mapping[str, Any], args_file: Path
) -> tuple[dict[str, Value], list[tuple[DeviceBuffer, Path]]]:
    try:
        return make_buffers(gpu, spec, args_file.parent)
    except OSError as err:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_RUN,
                    f"cannot read a buffer of `{args_file}`: {err.strerror or err}",
                    helps=("`input` paths are relative to the args file",),
                )
            ]
        ) from err
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_RUN,
                    f"`{args_file}` has a malformed buffer ({err})",
                    helps=('each buffer is {"input": FILE} or {"bytes": N}, optionally with "output": FILE',),
                )
            ]
        ) from err


class _Prepared:
    """One kernel's launch with its arguments and driver configuration built once: each call only queues it
    (no wait).

    The timing loop must queue launches faster than the GPU runs them, or the time between
    two events measures the host; building everything once keeps a launch to one driver call.
    """

    def __init__(self, kernel: Kernel, plan: Launch, block: bytes) -> None:
        self._function, self._plan = kernel.function, plan
        prepare(kernel.function, plan.dynamic_smem, plan.nonportable_cluster)
        self._config = driver_config(plan, 0)
        self._buffer = ctypes.create_string_buffer(block, max(len(block), 1))
        self._pointers = (ctypes.c_void_p * 1)(ctypes.addressof(self._buffer))
        self._params = ctypes.addressof(self._pointers) if block else 0

    def __call__(self) -> None:
        enqueue(self._function, self._plan, self._params, 0, config=self._config)


def _check(err: Any, call: str) -> None:
    from cuda.bindings import driver

    if err != driver.CUresult.CUDA_SUCCESS:
        raise DiagnosticError(
            [Diagnostic(Code.E_CUDA, f"`{call}` failed: {getattr(err, 'name', err)}", data=(("call", call),))]
        )


def _same_outputs(outputs: Sequence[Mapping[str, bytes]]) -> None:
    linked, control, null = outputs
    differ = [name for name in linked if linked[name] != control.get(name)]
    if not differ:
        return
    first = differ[0]
    a, b = linked[first], control[first]
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    null_differs = [name for name in linked if linked[name] != null.get(name)]
    notes = [
        f"buffer `{first}` first differs at byte {at} (of {len(a)})",
        "every buffer is compared after one launch on fresh inputs",
    ]
    if null_differs:
        notes.append(
            "the linked cubin loaded twice also gives different bytes: the kernel's outputs are not "
            "deterministic, so they cannot be compared bit for bit"
        )
    raise DiagnosticError(
        [
            Diagnostic(
                Code.E_PARITY,
                f"the control's outputs differ from the linked kernel's in {', '.join(f'`{d}`' for d in differ)}; "
                "no timing ratio is reported",
                notes=tuple(notes),
                helps=(
                    "a difference between two builds of the same sources is a bug to report with the output directory "
                    "(control.cu, generated.cu, both cubins)",
                ),
                data=(("reason", "outputs-differ"), ("buffers", ",".join(differ))),
            )
        ]
    )


def _device_name() -> str:
    from cuda.bindings import driver

    err, device = driver.cuCtxGetDevice()
    if err != driver.CUresult.CUDA_SUCCESS:
        return "unknown device"
    err, name = driver.cuDeviceGetName(256, device)
    if err != driver.CUresult.CUDA_SUCCESS:
        return "unknown device"
    raw = name if isinstance(name, bytes) else bytes(name)
    return raw.split(b"\0", 1)[0].decode(errors="replace")


class _Events:
    """Two CUDA events on the default stream: ``start()``, then ``stop()`` → milliseconds between them."""

    def __enter__(self) -> _Events:
        from cuda.bindings import driver

        self._driver = driver
        self._start = self._create()
        self._end = self._create()
        return self

    def __exit__(self, *exc: object) -> None:
        self._driver.cuEventDestroy(self._start)
        self._driver.cuEventDestroy(self._end)

    def _create(self) -> Any:
        err, event = self._driver.cuEventCreate(0)
        _check(err, "cuEventCreate")
        return event

    def start(self) -> None:
        (err,) = self._driver.cuEventRecord(self._start, 0)
        _check(err, "cuEventRecord")

    def stop(self) -> float:
        (err,) = self._driver.cuEventRecord(self._end, 0)
        _check(err, "cuEventRecord")
        (err,) = self._driver.cuEventSynchronize(self._end)
        _check(err, "cuEventSynchronize")
        err, ms = self._driver.cuEventElapsedTime(self._start, self._end)
        _check(err, "cuEventElapsedTime")
        return float(ms)
