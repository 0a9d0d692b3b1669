"""Every launcher takes the launch configuration from one record of the link (`link.json` `launch`), and they agree.

Issue 31 item 6: kernel.h launched a cluster kernel with a plain `cuLaunchKernel` (no cluster
attribute, no non-portable size) while the Python launcher set them, and `launch … grid` /
`cooperative` reached no launcher. Here the hello link's record is given each launch
configuration in turn, and for each device size and requested grid the four launchers —
kernel.h compiled against a recording stub of the driver, `run_linked`, `Session.launch` and
a `Session.capture`d graph (against a recording fake of the Python driver bindings) — must
pass the driver the same grid, block, shared memory and attributes, and refuse the same grids,
as `LaunchConfig.plan` decides.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cuda.bindings import driver

from analysis.link_inputs import link_inputs
from analysis.plan import Plan
from diagnostics.model import DiagnosticError
from kernlink.api import check_text, link
from linker.generate import generate
from linker.host_header import host_header
from linker.launch_config import LaunchConfig, LaunchRefused, launch_config
from runtime.host_providers import cuda_include
from runtime.launch import GpuSession
from runtime.run import run_linked
from runtime.session import Session
from tests.link.examples import build_example

OK = driver.CUresult.CUDA_SUCCESS

#: Launch configurations (over the hello link's own kernel, block size and shared memory).
CONFIGS = {
    "fixed": {},
    "grid-8": {"grid": 8},
    "resident": {"resident": True, "blocks_per_sm": 2},
    "persistent": {"kind": "persistent", "blocks_per_sm": 3},
    "cluster-2": {"cluster": [2, 1, 1], "grid": 8},
    "cluster-16": {"cluster": [16, 1, 1], "nonportable_cluster": True},
    "cooperative": {"cooperative": True, "resident": True},
    "cluster-cooperative": {"cluster": [2, 2, 1], "cooperative": True, "kind": "persistent"},
}
#: (SMs of the device, the grid the caller asks for; None: none).
CALLS = [(132, None), (132, 8), (132, 16), (132, 264), (132, 300), (7, None), (7, 14)]


def expected(config: LaunchConfig, sms: int, given: int | None) -> dict[str, Any]:
    try:
        plan = config.plan(given, sms)
    except LaunchRefused:
        return {"refused": True}
    return {
        "grid": list(plan.grid),
        "block": list(plan.block),
        "smem": plan.dynamic_smem,
        "cluster": list(plan.cluster) if plan.cluster else None,
        "cooperative": plan.cooperative,
        "nonportable": plan.nonportable_cluster,
    }


@pytest.fixture(scope="module")
def hello(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("launch")
    result = link([build_example("hello", root)], root / "out")
    assert result.ok, [d.message for d in result.diagnostics]
    return root / "out"


def _variant(hello: Path, folder: Path, name: str) -> tuple[Path, LaunchConfig]:
    """A copy of the hello link whose `launch` record is CONFIGS[name]."""
    shutil.copytree(hello, folder)
    record = json.loads((folder / "link.json").read_text())
    record["launch"] = {**record["launch"], **CONFIGS[name]}
    (folder / "link.json").write_text(json.dumps(record))
    return folder, LaunchConfig.from_json(record["launch"])


# ----------------------------------------------------------------- the record


def test_the_link_records_one_launch_configuration(hello: Path) -> None:
    record = json.loads((hello / "link.json").read_text())
    config = LaunchConfig.from_json(record["launch"])
    dispatch = record["dispatch"]
    assert (config.kernel, config.threads, config.dynamic_smem) == (
        dispatch["kernel"],
        dispatch["threads"],
        dispatch["dynamic_smem"],
    )
    assert (config.kind, config.grid, config.resident, config.cooperative, config.cluster) == (
        "fixed",
        None,
        False,
        False,
        (1, 1, 1),
    )
    assert "link.json `launch`" in (hello / "link.map").read_text()


STAGE = """stage "demo.cl" version "1.0.0" {
    target sm_90a
    role main entry demo_main warps 1
    LAUNCH
    cluster SHAPE
}
"""


@pytest.mark.parametrize(
    ("launch", "shape", "want"),
    [
        ("launch fixed threads 32", "1x1x1", (None, False, False, (1, 1, 1), False)),
        ("launch fixed threads 32 grid 8 cooperative", "1x1x1", (8, False, True, (1, 1, 1), False)),
        ("launch fixed threads 32 grid resident", "2x1x1", (None, True, False, (2, 1, 1), False)),
        ("launch persistent threads 32", "16x1x1", (None, False, False, (16, 1, 1), True)),
    ],
)
def test_the_configuration_is_what_the_launch_and_cluster_lines_state(
    launch: str, shape: str, want: tuple[object, ...]
) -> None:
    result = check_text(STAGE.replace("LAUNCH", launch).replace("SHAPE", shape), "demo.kc")
    assert result.accepted and result.composition is not None, [d.message for d in result.diagnostics]
    assert result.placed is not None
    config = launch_config(link_inputs(result.composition), generate(Plan(result.composition, result.placed)).dispatch)
    assert (config.grid, config.resident, config.cooperative, config.cluster, config.nonportable_cluster) == want


@pytest.mark.parametrize(
    "broken",
    [{}, {"kind": "cooperative"}, {"threads": 0}, {"cluster": [2, 1]}, {"grid": "eight"}],
    ids=["missing", "kind", "threads", "cluster", "grid"],
)
def test_a_malformed_record_is_refused_by_every_python_launcher(
    hello: Path, tmp_path: Path, broken: dict[str, Any]
) -> None:
    shutil.copytree(hello, tmp_path / "out")
    record = json.loads((tmp_path / "out" / "link.json").read_text())
    record["launch"] = {**record["launch"], **broken} if broken else None
    (tmp_path / "out" / "link.json").write_text(json.dumps(record))
    from runtime.run import LinkedKernel

    with pytest.raises(DiagnosticError) as err:
        LinkedKernel.load(tmp_path / "out").plan(4, 132)
    assert err.value.diagnostics[0].code == "E-RUN" and "launch configuration" in err.value.diagnostics[0].message


# ----------------------------------------------------------------- the launchers agree


STUB = r"""#include <stdio.h>
#include <stdlib.h>
#include "kernel.h"
static int sms_, nonportable_;
CUresult CUDAAPI cuModuleLoadData(CUmodule* m, const void* image) {
    (void)image; *m = (CUmodule)1; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
    (void)m; (void)name; *f = (CUfunction)2; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
    (void)f;
    if (a == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED && v == 1) nonportable_ = 1;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* d) { *d = 0; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
    (void)d; *v = a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? sms_ : 0; return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** args, void** extra) {
    (void)f; (void)args; (void)extra;
    int cx = 0, cy = 0, cz = 0, coop = 0;
    for (unsigned i = 0; i < c->numAttrs; ++i) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            cx = c->attrs[i].value.clusterDim.x;
            cy = c->attrs[i].value.clusterDim.y;
            cz = c->attrs[i].value.clusterDim.z;
        }
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) coop = c->attrs[i].value.cooperative;
    }
    printf("{\"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"smem\": %u, ", c->gridDimX, c->gridDimY,
           c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes);
    if (cx) printf("\"cluster\": [%d, %d, %d], ", cx, cy, cz); else printf("\"cluster\": null, ");
    printf("\"cooperative\": %s, \"nonportable\": %s}\n", coop ? "true" : "false", nonportable_ ? "true" : "false");
    return CUDA_SUCCESS;
}
int main(int argc, char** argv) {
    (void)argc;
    sms_ = atoi(argv[1]);
    CUmodule module;
    CUfunction function;
    if (kl_hello_load(&module, &function) != CUDA_SUCCESS) return 2;
    kl_hello_params params;
    kl_hello_params_init(&params);
    CUresult err = kl_hello_launch(module, function, NULL, (unsigned)atoi(argv[2]), &params);
    if (err == CUDA_ERROR_INVALID_VALUE) printf("{\"refused\": true}\n");
    return err == CUDA_SUCCESS || err == CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
"""


def _kernel_h(folder: Path, sms: int, given: int | None) -> dict[str, Any]:
    """What kernel.h, compiled against the stub driver, passes to cuLaunchKernelEx (or that it refuses)."""
    exe = folder / "stub"
    if not exe.exists():
        (folder / "stub.c").write_text(STUB)
        include = cuda_include()
        assert include is not None
        subprocess.run(
            [
                "cc",
                "-std=c99",
                "-Wall",
                "-Werror",
                f"-I{folder}",
                f"-I{include}",
                str(folder / "stub.c"),
                "-o",
                str(exe),
            ],
            check=True,
        )
    out = subprocess.run([str(exe), str(sms), str(given or 0)], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


class FakeDriver:
    """The Python driver bindings with every call a launcher makes answered, and launches recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sms = 0
        self.launches: list[dict[str, Any]] = []
        self.nonportable = False
        answers: dict[str, Any] = {
            "cuInit": (OK,),
            "cuDeviceGet": (OK, 0),
            "cuDevicePrimaryCtxRetain": (OK, object()),
            "cuCtxSetCurrent": (OK,),
            "cuModuleLoadData": (OK, object()),
            "cuModuleGetFunction": (OK, object()),
            "cuModuleUnload": (OK,),
            "cuDevicePrimaryCtxRelease": (OK,),
            "cuCtxSynchronize": (OK,),
            "cuStreamCreate": (OK, driver.CUstream(0)),
            "cuStreamDestroy": (OK,),
            "cuStreamSynchronize": (OK,),
            "cuStreamBeginCapture": (OK,),
            "cuStreamEndCapture": (OK, object()),
            "cuGraphInstantiate": (OK, object()),
            "cuGraphExecDestroy": (OK,),
            "cuGraphDestroy": (OK,),
        }
        for name, answer in answers.items():
            monkeypatch.setattr(driver, name, lambda *_, answer=answer: answer)
        monkeypatch.setattr(driver, "cuDeviceGetAttribute", self._attribute)
        monkeypatch.setattr(driver, "cuFuncSetAttribute", self._set)
        monkeypatch.setattr(driver, "cuLaunchKernelEx", self._launch)

    def _attribute(self, attribute: Any, device: Any) -> tuple[Any, int]:
        values = {
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: self.sms,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
        }
        return OK, values.get(attribute, 0)

    def _set(self, function: Any, attribute: Any, value: int) -> tuple[Any]:
        if attribute == driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
            self.nonportable = value == 1
        return (OK,)

    def _launch(self, config: Any, function: Any, params: Any, extra: Any) -> tuple[Any]:
        attrs = list(config.attrs)[: config.numAttrs]
        ids = driver.CUlaunchAttributeID
        cluster = next((a.value.clusterDim for a in attrs if a.id == ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), None)
        cooperative = [a.value.cooperative for a in attrs if a.id == ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE]
        self.launches.append(
            {
                "grid": [config.gridDimX, config.gridDimY, config.gridDimZ],
                "block": [config.blockDimX, config.blockDimY, config.blockDimZ],
                "smem": config.sharedMemBytes,
                "cluster": None if cluster is None else [cluster.x, cluster.y, cluster.z],
                "cooperative": bool(cooperative and cooperative[0]),
                "nonportable": self.nonportable,
            }
        )
        return (OK,)

    def take(self, launch: Any) -> dict[str, Any]:
        """What one call of ``launch`` passed to the driver, or that it was refused (E-RUN)."""
        self.launches.clear()
        try:
            launch()
        except DiagnosticError as err:
            assert [d.code for d in err.diagnostics] == ["E-RUN"], err.diagnostics
            return {"refused": True}
        assert len(self.launches) == 1, self.launches
        return self.launches[0]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDriver]:
    yield FakeDriver(monkeypatch)


@pytest.mark.skipif(cuda_include() is None or shutil.which("cc") is None, reason="no C compiler or cuda.h")
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_kernel_h_run_linked_session_and_graphs_launch_alike(
    hello: Path, tmp_path: Path, fake: FakeDriver, name: str
) -> None:
    folder, config = _variant(hello, tmp_path / name, name)
    record = json.loads((folder / "link.json").read_text())
    (folder / "kernel.h").write_text(host_header(record, (folder / "kernel.cubin").read_bytes()))
    values: dict[str, int | float | bool] = {"data": 1 << 20, "n": 64}
    for sms, given in CALLS:
        want = expected(config, sms, given)
        fake.sms = sms
        with GpuSession() as gpu:
            got = {"run_linked": fake.take(lambda g=gpu, n=given: run_linked(folder, gpu=g, values=values, grid=n))}
        with Session(folder) as session:
            session.bind(**values)
            got["Session.launch"] = fake.take(lambda s=session, n=given: s.launch(n))
            got["Session.capture"] = fake.take(lambda s=session, n=given: s.capture(1, n))
        got["kernel.h"] = _kernel_h(folder, sms, given)
        assert got == dict.fromkeys(got, want), (name, sms, given)


def test_no_launcher_calls_the_driver_launch_itself() -> None:
    """One launch path in Python: only runtime/launch.py `enqueue` launches (kernel.h's, which
    linker/host_header.py writes, is held to the same plan above)."""
    root = Path(__file__).resolve().parents[2]
    for folder in ("kernlink", "linker", "packing", "toolchain", "analysis", "runtime"):
        for source in (root / folder).rglob("*.py"):
            if source in (root / "runtime" / "launch.py", root / "linker" / "host_header.py"):
                continue
            text = source.read_text()
            for call in ("cuLaunchKernel(", "cuLaunchKernelEx(", "cuLaunchCooperativeKernel(", "cuGraphAddKernelNode("):
                assert call not in text, f"{source.relative_to(root)} calls {call[:-1]}"
