"""The ring_fed example (specs/examples/ring_fed): a persistent producer hands tile after tile to
another owner's consumer through a two-slot ring-fed export. `kernlink build` packs, checks,
places and links it; its link map is a snapshot, and `kernlink parity` proves the link the
one-unit build of the same sources."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from kernlink.cli import main
from linker.sass import find_disassembler
from runtime.launch import GpuSession
from runtime.run import run_linked
from tests.link.examples import f32, floats
from tests.snapshots import assert_text_snapshot, stable_link_map

pytestmark = pytest.mark.toolchain

FOLDER = Path(__file__).resolve().parents[2] / "specs" / "examples" / "ring_fed"
PIPELINE = "ring_fed.kp"
SNAPSHOT = Path(__file__).parent / "snapshots" / "ring_fed.link.map"


def _build(root: Path, edits: tuple[tuple[str, str, str], ...] = ()) -> tuple[int, Path]:
    folder = root / "ring_fed"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("build"))
    for name, old, new in edits:
        text = (folder / name).read_text()
        assert old in text, f"{old!r} not in {name}"
        (folder / name).write_text(text.replace(old, new))
    out = root / "out"
    return main(["build", str(folder / PIPELINE), "-o", str(out), "--no-server", "--color", "never"]), out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example copied without its build/ folder and built as a user would: its output folder."""
    code, out = _build(tmp_path_factory.mktemp("ring_fed"))
    assert code == 0
    return out


def test_the_pipeline_links_through_the_ring_fed_hand_off(built: Path) -> None:
    plan = json.loads((built / "link.json").read_text())
    assert plan["status"] == "linked" and plan["diagnostics"] == []
    [transfer] = plan["generated"]["transfers"] if "generated" in plan else plan["transfers"]
    assert (transfer["ring"], transfer["depth"], transfer["barrier_ids"]) == ("tiles", 2, [])
    assert transfer["connection"] == "ring_fed.producer.rows -> ring_fed.consumer.tile"
    ptx = (built / "kernel.ptx").read_text()
    assert re.findall(r"^\s*call", ptx, re.M) == []  # both handles inlined
    assert ptx.count("st.shared.b32") == 32 and ptx.count("ld.shared.b32") == 32
    assert ptx.count("mbarrier.try_wait.parity") == 2 and ptx.count("mbarrier.arrive.shared::cta.b64") == 2
    assert not re.search(r"\bbar(rier)?\.(sync|arrive)\s+[1-9]", ptx)  # no named barrier
    assert "__syncwarp();  // the warp's moves happen before lane 0's arrive" in (built / "generated.cu").read_text()


def test_the_link_map_is_the_snapshot(built: Path) -> None:
    assert_text_snapshot(SNAPSHOT, stable_link_map((built / "link.map").read_text()))


def test_parity_proves_the_link_the_one_unit_build(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = built.parent / "ring_fed"
    out = tmp_path / "parity"
    argv = ["parity", str(folder / PIPELINE), "-o", str(out), "-I", str(folder), "--format", "json"]
    capsys.readouterr()
    assert main(argv) == 0
    said = json.loads(capsys.readouterr().out)
    report = said["report"]
    assert said["proved"] is True and report["verdict"] == "identical" and report["folded"] is True
    assert report["calls"] == [] and all(r["equal"] for r in report["resources"])
    if find_disassembler() is not None:
        assert report["sass"]["identical"] is True


def test_a_role_that_steps_its_ring_fed_ring_itself_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hand-off runs the consumer's `full wait` and `empty arrive`: a consumer that also arrives
    on the ring's `empty` barrier would release each slot twice (L-CONFORM, `ring-step`); the example
    itself (the passing twin) is built by the other tests."""
    call = "            kl_ring_fed_consumer_tile_import(nullptr, got, static_cast<int>(c), generation);\n"
    release = (
        '            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(static_cast<unsigned>('
        '__cvta_generic_to_shared(smem)) + kl_ring_fed_consumer_tiles_empty_bar()) : "memory");\n'
    )
    edits = (
        ("consumer.cu", "unsigned char* /*smem*/", "unsigned char* smem"),
        ("consumer.cu", call, call + release),
    )
    code, _ = _build(tmp_path, edits)
    said = capsys.readouterr()
    assert code == 1
    text = said.out + said.err
    assert (
        "error[L-CONFORM]: `ring_fed_sum_main` runs `mbarrier.arrive.shared::cta.b64` on the empty barrier of " in text
    )
    assert "ring `tiles`, whose consume side the ring-fed tensor handle runs" in text


@pytest.mark.gpu
@pytest.mark.parametrize(("tiles", "blocks"), [(7, 1), (37, 4), (3, 8), (264, 132)])
def test_the_linked_kernel_hands_every_tile_over_on_the_gpu(built: Path, tiles: int, blocks: int) -> None:
    """dst = 2 * src + 1 in float32, bit for bit: every generation reached the consumer whole, in its
    slot, and no slot was overwritten before it was read (one CTA runs 7 tiles: the ring wraps 3 times;
    3 tiles on 8 CTAs: five CTAs run none)."""
    data = floats(tiles * 4096, tiles)
    with GpuSession() as gpu:
        src, dst = gpu.upload(data.tobytes()), gpu.alloc(tiles * 4096 * 4)
        run_linked(built, gpu=gpu, grid=blocks, values={"src": src, "dst": dst, "tiles": tiles})
        got = array("f", gpu.download(dst)).tolist()
    assert got == [f32(f32(2.0 * x) + 1.0) for x in data]


def test_a_per_warpgroup_variant_links_with_warpgroup_barriers_and_is_proved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Arrivals once per warpgroup: each warpgroup syncs a named barrier of its own before its thread
    0 arrives; the link still folds every handle into the one-unit build's code."""
    per_warpgroup = tuple(
        (name, f"{which} per_warp({role})", f"{which} per_warpgroup({role})")
        for name, which, role in (
            ("producer.kc", "full init", "make"),
            ("producer.kc", "full arrive", "make"),
            ("producer.kc", "empty init", "sum"),
            ("consumer.kc", "empty arrive", "sum"),
        )
    )
    code, out = _build(tmp_path, per_warpgroup)
    assert code == 0
    plan = json.loads((out / "link.json").read_text())
    [transfer] = plan["generated"]["transfers"] if "generated" in plan else plan["transfers"]
    assert len(transfer["barrier_ids"]) == 2 and transfer["barrier_threads"] == 128
    ptx = (out / "kernel.ptx").read_text()
    assert sorted(re.findall(r"\bbarrier\.sync\s+(\d+), 128;", ptx)) == sorted(map(str, transfer["barrier_ids"]))
    folder = tmp_path / "ring_fed"
    argv = ["parity", str(folder / PIPELINE), "-o", str(tmp_path / "parity"), "-I", str(folder), "--format", "json"]
    capsys.readouterr()
    assert main(argv) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["proved"] is True and said["report"]["verdict"] == "identical"


def _link_watched(folder: Path, out: Path, cycles: int) -> int:
    """`kernlink link --watchdog` of a built copy of the example (its packages are in folder/build)."""
    return main(["link", str(folder / PIPELINE), "-o", str(out), f"--watchdog={cycles}", "--ptx"])


def test_the_watchdog_bounds_both_waits_of_the_hand_off(built: Path, tmp_path: Path) -> None:
    """With `--watchdog` the export's `empty wait` and the import's `full wait` are sites of their own,
    named by their contract lines; only those two waits change in the generated code."""
    folder = built.parent / "ring_fed"
    assert main(["link", str(folder / PIPELINE), "-o", str(tmp_path / "plain"), "--ptx"]) == 0
    assert _link_watched(folder, tmp_path / "watched", 1000) == 0
    sites = json.loads((tmp_path / "watched" / "link.json").read_text())["watchdog"]["sites"]
    assert [(s["id"], s["symbol"], s["kind"], s["item"], s["where"].rsplit("!", 1)[-1]) for s in sites] == [
        (0, "kl_ring_fed_producer_rows_export", "ring_empty_wait", "tiles", "contract.kc:14"),
        (1, "kl_ring_fed_consumer_tile_import", "ring_full_wait", "tiles", "contract.kc:12"),
    ]
    plain = (tmp_path / "plain" / "generated.cu").read_text()
    watched = (tmp_path / "watched" / "generated.cu").read_text()
    assert "trap" not in (tmp_path / "plain" / "kernel.ptx").read_text()
    assert "trap;" in (tmp_path / "watched" / "kernel.ptx").read_text()
    assert plain.count("kl_ring_fed_wait(") == 3  # the helper and its two calls
    assert watched.count("kl_ring_fed_wait(") == 1  # the helper alone: both calls are bounded loops
    assert watched.count("kl_watchdog_fire(0u, slot,") == 1 and watched.count("kl_watchdog_fire(1u, slot,") == 1


@pytest.mark.gpu
def test_a_hand_off_that_never_releases_is_named_by_the_watchdog(tmp_path: Path) -> None:
    """The consumer skips the import's last chunk, so no slot is ever released: the producer hangs on
    `empty` once the ring wraps and the consumer on `full` after it. `--watchdog` turns the hang into
    E-HANG diagnostics naming ring `tiles`, the barrier, the role and the contract line. The run is a
    child process (`kernlink run`): the trap leaves its CUDA context unusable, which must not reach the
    GPU tests after this one."""
    code, _ = _build(tmp_path, (("consumer.cu", "c < kChunks;", "c + 1 < kChunks;"),))
    assert code == 0  # `kernlink check` cannot see it: the consumer calls the import, never its last chunk
    folder, out = tmp_path / "ring_fed", tmp_path / "watched"
    assert _link_watched(folder, out, 20_000_000) == 0
    tiles = 7
    args = {
        "grid": 1,
        "values": {"tiles": tiles},
        "buffers": {"src": {"bytes": tiles * 4096 * 4}, "dst": {"bytes": tiles * 4096 * 4}},
    }
    (tmp_path / "args.json").write_text(json.dumps(args))
    argv = [
        sys.executable,
        "-m",
        "kernlink",
        "run",
        str(out),
        "--args",
        str(tmp_path / "args.json"),
        "--color",
        "never",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    text = done.stdout + done.stderr
    assert done.returncode != 0 and "error[E-HANG]" in text, text
    assert "ring `tiles` slot 0, parity 0: role `make` of `ring_fed.producer` waits `empty`" in text, text
    assert "producer.kpkg!contract.kc:14" in text and "kl_ring_fed_producer_rows_export" in text, text
