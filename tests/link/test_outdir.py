"""A link output directory is one link's, or reported broken: never a mix a loader accepts.

Every write step of ``write_outputs`` is interrupted in a subprocess (SIGKILL: nothing
cleans up; SIGINT: the clean-up runs) over an earlier link in the same directory;
afterwards the directory must load as the old link until the swap, as the new one after
it, and only a kill inside the swap may leave it refused by ``LinkedKernel.load`` and
``kernlink run`` (never ``E-CUDA``, which would mean the run got as far as the GPU). A
failed link keeps the good link it would replace. Concurrent writers and readers share a
directory through its lock.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from diagnostics.model import Diagnostic, DiagnosticError
from kernlink.api import link
from kernlink.cli import main
from linker import outdir
from linker.link import CUBIN, JSON, MAP, PTX, LinkOutput, output_files, write_outputs
from runtime.launch import gpu_available
from runtime.run import LinkedKernel, run_linked

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
STEPS = ("lock", CUBIN, PTX, "generated.cu", MAP, JSON, "swap", "uncommit", "done")
WRITER = """
import os, pickle, signal, sys, time
from pathlib import Path
from linker.outdir import write_set
files, manifest = pickle.loads(open(sys.argv[1], "rb").read())
stop, how = sys.argv[3], sys.argv[4]
def hook(step):
    if how == "slow":
        time.sleep(0.02)
    elif step == stop:
        os.kill(os.getpid(), signal.SIGKILL if how == "kill" else signal.SIGINT)
try:
    write_set(Path(sys.argv[2]), files, manifest, managed=[name for name, _ in files], complete=True, hook=hook)
except KeyboardInterrupt:
    sys.exit(130)
"""
"""A writer process: ``write_outputs``' own step (``write_set``) on a link's pickled files."""


@pytest.fixture(scope="module")
def outputs(pipelines: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The hello and ring links (with PTX), pickled whole and as the files a writer process writes."""
    folder = tmp_path_factory.mktemp("outputs")
    found = {}
    for name, pipeline in pipelines.items():
        result = link([pipeline], emit_ptx=True)
        assert result.ok and result.output is not None
        (folder / f"{name}.pickle").write_bytes(pickle.dumps(result.output))
        (folder / f"{name}.files").write_bytes(pickle.dumps(output_files(result.output)))
        found[name] = folder / f"{name}.pickle"
    return found


def _output(path: Path) -> LinkOutput:
    output = pickle.loads(path.read_bytes())
    assert isinstance(output, LinkOutput)
    return output


def _write(pickled: Path, directory: Path, stop: str = "", how: str = "") -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(pickled.with_suffix(".files")), str(directory), stop, how], cwd=ROOT, env=env
    )


def state(directory: Path, links: dict[str, LinkOutput]) -> str:
    """Which link the directory loads as, or ``broken`` (with the code a loader reports)."""
    try:
        kernel = LinkedKernel.load(directory)
    except DiagnosticError as err:
        codes = {d.code for d in err.diagnostics}
        assert codes <= {"E-RUN", "L-INTEGRITY"}, codes
        return "broken"
    for name, out in links.items():
        if kernel.cubin == out.cubin:
            assert json.loads(out.map_json) == kernel.map, f"the cubin of {name} beside another manifest"
            assert (directory / MAP).read_text() == out.map_text
            assert out.generated is not None
            assert (directory / "generated.cu").read_text() == out.generated.source
            assert (directory / PTX).read_text() == out.ptx
            return name
    raise AssertionError("a cubin of neither link loads")


def _run_refuses(directory: Path, capsys: pytest.CaptureFixture[str]) -> str:
    args = directory.parent / "args.json"
    args.write_text(json.dumps({"grid": 1, "values": {}}))
    capsys.readouterr()
    assert main(["run", str(directory), "--args", str(args), "--color", "never"]) == 1
    said = capsys.readouterr().out
    assert "E-CUDA" not in said and "Traceback" not in said
    return said


@pytest.mark.parametrize("how", ["kill", "interrupt"])
@pytest.mark.parametrize("stop", STEPS)
def test_an_interrupted_link_leaves_the_old_link_the_new_one_or_a_refused_directory(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], stop: str, how: str
) -> None:
    links = {name: _output(path) for name, path in outputs.items()}
    out = tmp_path / "out"
    write_outputs(links["hello"], out)
    assert state(out, links) == "hello"
    writer = _write(outputs["ring"], out, stop, how)
    assert writer.wait(60) == (-signal.SIGKILL if how == "kill" else 130)
    found = state(out, links)
    swapped = STEPS.index(stop) >= STEPS.index("uncommit")  # SIGINT is held back inside the swap
    expected = ("broken" if how == "kill" and stop == "uncommit" else "ring") if swapped else "hello"
    assert found == expected
    if how == "interrupt":  # the clean-up ran: no temporary
        assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    if found == "broken":  # killed between the old manifest's removal and the new one's rename
        said = _run_refuses(out, capsys)
        assert "error[E-RUN]" in said and "holds no linked kernel" in said
    write_outputs(links["ring"], out)  # the next link repairs whatever was left
    assert state(out, links) == "ring"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_cubin_replaced_behind_the_manifest_is_l_integrity(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    links = {name: _output(path) for name, path in outputs.items()}
    out = tmp_path / "out"
    write_outputs(links["hello"], out)
    cubin = links["ring"].cubin
    assert cubin is not None
    (out / CUBIN).write_bytes(cubin)  # another link's cubin: a valid ELF, the wrong one
    with pytest.raises(DiagnosticError) as info:
        LinkedKernel.load(out)
    found: Diagnostic = info.value.diagnostics[0]
    assert found.code == "L-INTEGRITY"
    assert found.message == f"`{out / CUBIN}` does not match the SHA-256 that `{out / JSON}` records"
    assert "error[L-INTEGRITY]" in _run_refuses(out, capsys)


def test_a_manifest_without_a_hash_is_l_integrity(outputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_outputs(_output(outputs["hello"]), out)
    manifest = json.loads((out / JSON).read_text())
    del manifest["cubin"]
    (out / JSON).write_text(json.dumps(manifest))
    with pytest.raises(DiagnosticError) as info:
        LinkedKernel.load(out)
    assert info.value.diagnostics[0].code == "L-INTEGRITY"
    assert "records no SHA-256" in info.value.diagnostics[0].message


def test_a_launch_checks_the_hash_too(outputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_outputs(_output(outputs["hello"]), out)
    kernel = LinkedKernel.load(out)
    forged = LinkedKernel(kernel.cubin + b"\0", kernel.map, kernel.directory)
    with pytest.raises(DiagnosticError) as info:
        run_linked(forged, gpu=None, values={}, grid=1)  # type: ignore[arg-type]
    assert info.value.diagnostics[0].code == "L-INTEGRITY"


@pytest.mark.parametrize("full", [CUBIN, MAP, JSON])
def test_a_full_disk_while_staging_keeps_the_previous_link(
    outputs: dict[str, Path], pipelines: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full: str
) -> None:
    links = {name: _output(path) for name, path in outputs.items()}
    out = tmp_path / "out"
    write_outputs(links["hello"], out)
    before = sorted(p.name for p in out.iterdir())
    real = outdir.write_temporary

    def disk_full(path: str | Path, data: bytes) -> Path:
        if Path(path).name == full:
            raise DiagnosticError([Diagnostic("E-IO", f"cannot write `{path}`: No space left on device")])
        return real(path, data)

    monkeypatch.setattr(outdir, "write_temporary", disk_full)
    result = link([pipelines["ring"]], out, emit_ptx=True)
    assert not result.ok and [d.code for d in result.diagnostics if d.is_error] == ["E-IO"]
    assert sorted(p.name for p in out.iterdir()) == before  # no temporary, nothing of the new link
    assert state(out, links) == "hello"


def test_a_failed_link_keeps_the_good_link_and_writes_its_map_beside_it(
    outputs: dict[str, Path], pipelines: dict[str, Path], tmp_path: Path
) -> None:
    links = {name: _output(path) for name, path in outputs.items()}
    out = tmp_path / "out"
    write_outputs(links["hello"], out)
    contracts = [pipelines["hello"].parent / f"{name}.kc" for name in ("provider", "caller")]
    assert not link(contracts, out).ok
    assert state(out, links) == "hello"
    assert json.loads((out / "link.failed.json").read_text())["status"] == "failed"
    assert "error[L-STAGE]" in (out / "link.failed.map").read_text()
    write_outputs(links["ring"], out)  # a complete link removes the report of the failed one
    assert state(out, links) == "ring"
    assert not [p for p in out.iterdir() if ".failed." in p.name]


def test_the_map_is_still_written_when_the_link_fails(pipelines: dict[str, Path], tmp_path: Path) -> None:
    """Into a directory without a good link, a failed link writes its map and manifest under their own names."""
    out = tmp_path / "out"
    contracts = [pipelines["hello"].parent / f"{name}.kc" for name in ("provider", "caller")]
    assert not link(contracts, out).ok
    assert sorted(p.name for p in out.iterdir()) == [JSON, MAP]
    assert json.loads((out / JSON).read_text())["status"] == "failed"
    assert "error[L-STAGE]" in (out / MAP).read_text()


@pytest.mark.parametrize("name", [CUBIN, JSON, "link.failed.map"])
def test_an_output_name_that_is_a_fifo_is_refused_not_opened(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """A FIFO with no reader used to block the link forever."""
    links = {n: _output(path) for n, path in outputs.items()}
    out = tmp_path / "out"
    write_outputs(links["hello"], out)
    (out / name).unlink(missing_ok=True)
    os.mkfifo(out / name)
    with pytest.raises(DiagnosticError) as info:
        write_outputs(links["ring"], out)
    (found,) = info.value.diagnostics
    assert found.code == "E-IO" and found.message == f"cannot write `{out / name}`: it is a FIFO, not a regular file"
    assert stat.S_ISFIFO(os.stat(out / name).st_mode)


def test_concurrent_links_and_loads_share_a_directory(outputs: dict[str, Path], tmp_path: Path) -> None:
    links = {name: _output(path) for name, path in outputs.items()}
    out = tmp_path / "out"
    write_outputs(links["hello"], out)
    seen: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(state(out, links))
            time.sleep(0.005)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(2):
            writers = [_write(outputs[name], out, "", "slow") for name in ("ring", "hello")]
            assert [w.wait(60) for w in writers] == [0, 0]
            assert state(out, links) in ("hello", "ring")
    finally:
        stop.set()
        reader.join()
    assert seen and set(seen) <= {"hello", "ring"}  # a reader never sees a write in progress


def test_two_concurrent_cli_links_into_one_directory(
    pipelines: dict[str, Path], outputs: dict[str, Path], tmp_path: Path
) -> None:
    links = {name: _output(path) for name, path in outputs.items()}
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernlink",
                "link",
                str(pipelines[name]),
                "-o",
                str(out),
                "--ptx",
                "--color",
                "never",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for name in ("hello", "ring")
    ]
    assert [p.wait(120) for p in procs] == [0, 0]
    assert state(out, links) in ("hello", "ring")


@pytest.mark.skipif(gpu_available(), reason="checks the error path on a machine without a GPU")
def test_an_intact_link_gets_as_far_as_the_gpu(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    write_outputs(_output(outputs["hello"]), out)
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"grid": 1, "values": {"n": 4}, "buffers": {"data": {"bytes": 64}}}))
    capsys.readouterr()
    assert main(["run", str(out), "--args", str(args), "--color", "never"]) == 1
    assert "error[E-CUDA]" in capsys.readouterr().out


@pytest.mark.parametrize("verb", ["link", "build"])
def test_link_and_build_into_a_directory_holding_a_fifo_exit_2_at_once(
    pipelines: dict[str, Path], tmp_path: Path, verb: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / CUBIN)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERNLINK_CACHE": str(tmp_path / "cache")}
    extra = ["--no-server"] if verb == "build" else []
    done = subprocess.run(
        [sys.executable, "-m", "kernlink", verb, str(pipelines["hello"]), "-o", str(out), "--color", "never", *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"error[E-IO]: cannot write `{out / CUBIN}`: it is a FIFO, not a regular file" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
