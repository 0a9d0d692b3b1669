"""The persistent GEMM + SwiGLU (specs/examples/gemm_swiglu/persistent): five pipelines that
`kernlink build` packs, checks, places and links into one cubin each — the 2 x 1 cluster kernel
(gemm_swiglu_persistent.kp), the same tiles without the cluster (gemm_swiglu_persistent_c1.kp: its
own producer and mainloop, no multicast, the cluster kernel's other packages), the small-M path
(gemm_swiglu_persistent_small.kp, 128 x 128 tiles without a cluster, sharing the fix-up and epilogue
packages) and the swap-AB path for M <= 32
(gemm_swiglu_persistent_swapab.kp: the small path's scheduler, its own producer, mainloop and
transposed epilogue) and the same for 32 < M <= 64 (gemm_swiglu_persistent_swapab64.kp: packages of
x_rows 64 over the swap-AB code, producer_swapab.cuh, consumer_swapab.cuh and epilogue_swapab.cuh); each
link map is a snapshot, and `kernlink parity` proves each link the one-unit build of the same sources."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernlink.cli import main
from linker.sass import find_disassembler
from packing.pack import build, conformance_findings
from tests.snapshots import assert_text_snapshot, stable_link_map

pytestmark = pytest.mark.toolchain

FOLDER = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
SNAPSHOTS = Path(__file__).parent / "snapshots"


@dataclass(frozen=True)
class Pipeline:
    kp: str
    stems: tuple[str, ...]
    dynamic_smem: int
    counter_words: int | None  # the stream-K flags: one word per CTA of a 132-SM grid (None: no counter)
    # the shared fix-up and epilogue packages' exports of the other tile width, which no call
    # reaches (I-EXPORT-DROPPED, a note: LTO drops them)
    dropped: tuple[str, ...]

    @property
    def snapshot(self) -> Path:
        return SNAPSHOTS / f"{self.kp.removesuffix('.kp')}.link.map"


PIPELINES = {
    # 4 slots of 48 KiB + 32 KiB of staging; 132 clusters' worth of CTA pairs
    "cluster": Pipeline(
        "gemm_swiglu_persistent.kp",
        ("scheduler", "producer", "consumer", "fixup", "epilogue"),
        229456,
        264,
        ("gs_fixup_add_r64", "gs_fixup_store_r64", "gs_swiglu_store_n128", "gs_swiglu_write_n128"),
    ),
    # the same tiles without the cluster (no multicast): 4 slots of 48 KiB + 32 KiB of staging; 132 CTAs
    "c1": Pipeline(
        "gemm_swiglu_persistent_c1.kp",
        ("scheduler", "producer_c1", "consumer_c1", "fixup", "epilogue"),
        229456,
        132,
        ("gs_fixup_add_r64", "gs_fixup_store_r64", "gs_swiglu_store_n128", "gs_swiglu_write_n128"),
    ),
    # 6 slots of 32 KiB + 16 KiB of staging; 132 CTAs
    "small": Pipeline(
        "gemm_swiglu_persistent_small.kp",
        ("scheduler_small", "producer_small", "consumer_small", "fixup", "epilogue"),
        213104,
        132,
        ("gs_fixup_add", "gs_fixup_store", "gs_swiglu_store", "gs_swiglu_write"),
    ),
    # 11 slots of 20 KiB (W's 64 gate and 64 up rows, X's 32), no staging, no counter
    "swapab": Pipeline(
        "gemm_swiglu_persistent_swapab.kp",
        ("scheduler_small", "producer_swapab", "consumer_swapab", "epilogue_swapab"),
        225456,
        None,
        (),
    ),
    # 9 slots of 24 KiB (W's 64 gate and 64 up rows, X's 64), no staging, no counter
    "swapab64": Pipeline(
        "gemm_swiglu_persistent_swapab64.kp",
        ("scheduler_small", "producer_swapab64", "consumer_swapab64", "epilogue_swapab64"),
        221328,
        None,
        (),
    ),
}


@pytest.fixture(scope="module", params=sorted(PIPELINES))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Pipeline, Path]:
    """The example copied without its build/ folder and one pipeline built as a user would: the
    pipeline and its output folder."""
    pipeline = PIPELINES[request.param]
    root = tmp_path_factory.mktemp(f"persistent_{request.param}")
    folder = root / "persistent"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("build"))
    out = root / "out"
    assert main(["build", str(folder / pipeline.kp), "-o", str(out), "--no-server"]) == 0
    return pipeline, out


def test_every_component_is_packed_and_the_pipeline_links(built: tuple[Pipeline, Path]) -> None:
    pipeline, out = built
    packages = out.parent / "persistent" / "build"
    assert sorted(p.name for p in packages.glob("*.kpkg")) == sorted(f"{s}.kpkg" for s in pipeline.stems)
    assert (out / "kernel.cubin").stat().st_size > 0
    plan = json.loads((out / "link.json").read_text())
    assert plan["status"] == "linked"
    assert {d["code"] for d in plan["diagnostics"]} <= {"I-EXPORT-DROPPED"}
    dropped = sorted(d["message"].split("`")[1] for d in plan["diagnostics"])
    assert dropped == sorted(pipeline.dropped)
    assert plan["launch"]["dynamic_smem"] == pipeline.dynamic_smem
    words = plan["counters"]["words"] if "counters" in plan else None
    assert words == pipeline.counter_words


def test_the_built_pipeline_checks_strictly(built: tuple[Pipeline, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """`check --strict` over the packages: every conformance site decided, the scheduler's callables
    included (each role hands them pointers to its own stack objects, `&sched` and `&problem`)."""
    pipeline, out = built
    folder = out.parent / "persistent"
    capsys.readouterr()
    assert main(["check", "--strict", str(folder / pipeline.kp), "--format", "json"]) == 0, capsys.readouterr().out


def test_the_link_map_is_the_snapshot(built: tuple[Pipeline, Path]) -> None:
    pipeline, out = built
    assert_text_snapshot(pipeline.snapshot, stable_link_map((out / "link.map").read_text()))


def test_parity_proves_the_link_the_one_unit_build(
    built: tuple[Pipeline, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline, built_out = built
    folder = built_out.parent / "persistent"
    out = tmp_path / "parity"
    argv = ["parity", str(folder / pipeline.kp), "-o", str(out), "-I", str(folder), "--format", "json"]
    capsys.readouterr()
    assert main(argv) == 0
    said = json.loads(capsys.readouterr().out)
    report = said["report"]
    assert said["proved"] is True and report["verdict"] == "identical" and report["folded"] is True
    assert report["calls"] == [] and all(r["equal"] for r in report["resources"])
    if find_disassembler() is not None:
        assert report["sass"]["identical"] is True


@pytest.mark.parametrize(
    "stem",
    [
        "consumer_small",
        "consumer_swapab",
        "producer_swapab",
        "epilogue_swapab",
        "consumer_swapab64",
        "producer_swapab64",
        "epilogue_swapab64",
        "consumer_c1",
        "producer_c1",
    ],
)
def test_the_other_pipelines_components_conform_under_strict(stem: str, tmp_path: Path) -> None:
    """As gemm.mainloop (tests/conformance/test_cases.py): every ring, barrier and counter step of
    the small-M consumers' code, the swap-AB producer's (its 4-D gate and up boxes, X's box with its
    credit; x_rows 32 and 64), and the cluster-less producer's and mainloop's
    (gemm_swiglu_persistent_c1.kp: W's 256-row box without multicast, `empty` released on this CTA
    alone) is decided and matches the contract."""
    built = build(FOLDER / f"{stem}.cu", FOLDER / f"{stem}.kc")
    assert conformance_findings(built, tmp_path / "x.kpkg", strict=True) == []


def test_the_swapab_rows_of_x_are_the_producers_fact(tmp_path: Path) -> None:
    """The swap-AB mainloop and epilogue compile in wgmma's N, the rows of X a slot holds; the
    producer owns it. A producer that holds another number of rows makes both stale (L-FACT), each
    at its own `assumes`: neither links against a slot it would misread. The producer's sizes are
    written from `x_rows` (specs/language.md §7.2): its one edit and its regenerated header conform."""
    folder = tmp_path / "persistent"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("build"))
    contract = folder / "producer_swapab.kc"
    text = contract.read_text()
    assert text.count("owns fact x_rows: u32 = 32") == 1
    contract.write_text(text.replace("owns fact x_rows: u32 = 32", "owns fact x_rows: u32 = 16"))
    assert main(["header", str(contract), "-o", str(folder / "kl_gemm_producer_swapab.h")]) == 0
    out = tmp_path / "out"
    assert main(["build", str(folder / "gemm_swiglu_persistent_swapab.kp"), "-o", str(out), "--no-server"]) != 0
    plan = json.loads((out / "link.json").read_text())
    assert plan["status"] == "rejected"
    errors = [d for d in plan["diagnostics"] if d["severity"] == "error"]
    assert [d["code"] for d in errors] == ["L-FACT", "L-FACT"]
    assert sorted(d["message"].split("`")[1] for d in errors) == ["gemm.mainloop_swapab", "swiglu.epilogue_swapab"]
