"""`kernel.h`: a C/C++ caller launches a linked kernel through the generated host header.

On the CPU: the header agrees with the link record (offsets, geometry, the embedded cubin
byte for byte) and the ring host example compiles as C99 and as C++17 against the CUDA
driver header. On a GPU (``gpu``): the example is linked with -lcuda and run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernlink.api import LinkResult
from linker.host_header import host_header

Linked = dict[str, tuple[LinkResult, Path]]
EXAMPLE = Path(__file__).resolve().parents[2] / "specs" / "examples" / "ring" / "host" / "ring_host.c"


def cuda_include() -> Path | None:
    """The CUDA toolkit's include folder (CUDA_HOME, the nvcc on PATH, or /usr/local/cuda)."""
    candidates = [os.environ.get("CUDA_HOME", "")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    candidates.append("/usr/local/cuda")
    for root in candidates:
        if root and (Path(root) / "include" / "cuda.h").is_file():
            return Path(root) / "include"
    return None


def _header(linked: Linked, name: str) -> tuple[str, dict[str, object], bytes]:
    """The kernel.h `kernlink link` wrote, which must be the header of the record and cubin beside it."""
    out = linked[name][1]
    record = json.loads((out / "link.json").read_text())
    cubin = (out / "kernel.cubin").read_bytes()
    text = (out / "kernel.h").read_text()
    assert text == host_header(record, cubin)
    return text, record, cubin


def test_header_matches_the_link_record(linked: Linked) -> None:
    text, record, cubin = _header(linked, "ring")
    dispatch = record["dispatch"]
    assert isinstance(dispatch, dict)
    assert f"#define KL_RING_THREADS {dispatch['threads']}u" in text
    assert f"#define KL_RING_DYNAMIC_SMEM {dispatch['dynamic_smem']}u" in text
    body = re.search(r"kl_ring_cubin\[(\d+)\] KL_ALIGNED = \{(.*?)\};", text, re.S)
    assert body is not None and int(body.group(1)) == len(cubin)
    assert bytes(int(b, 16) for b in re.findall(r"0x([0-9a-f]{2})", body.group(2))) == cubin
    assert "params->ring_reduce_tile_elems = (uint32_t)8192;" in text, "facts are written by params_init"
    assert "offsetof(kl_ring_params, ring_reduce_tiles) == 28" in text


def test_hello_header_writes_the_provider_fact(linked: Linked) -> None:
    text = _header(linked, "hello")[0]
    assert "params->hello_caller_factor = (uint32_t)3;" in text
    assert "CUdeviceptr hello_caller_data;" in text


@pytest.mark.skipif(cuda_include() is None or shutil.which("cc") is None, reason="no C compiler or cuda.h")
@pytest.mark.parametrize("compiler", [["cc", "-std=c99"], ["c++", "-x", "c++", "-std=c++17"]])
def test_ring_host_example_compiles(linked: Linked, tmp_path: Path, compiler: list[str]) -> None:
    if shutil.which(compiler[0]) is None:
        pytest.skip(f"no {compiler[0]}")
    (tmp_path / "kernel.h").write_text(_header(linked, "ring")[0])
    subprocess.run(
        [
            *compiler,
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O2",
            f"-I{tmp_path}",
            f"-I{cuda_include()}",
            "-c",
            str(EXAMPLE),
            "-o",
            str(tmp_path / "ring_host.o"),
        ],
        check=True,
    )


@pytest.mark.gpu
def test_ring_host_example_runs(linked: Linked, tmp_path: Path) -> None:
    include = cuda_include()
    assert include is not None, "a GPU machine has the CUDA toolkit"
    (tmp_path / "kernel.h").write_text(_header(linked, "ring")[0])
    exe = tmp_path / "ring_host"
    subprocess.run(
        ["cc", "-std=c99", "-O2", f"-I{tmp_path}", f"-I{include}", str(EXAMPLE), "-lcuda", "-o", str(exe)], check=True
    )
    for tiles, grid in ((37, 4), (264, 132)):
        run = subprocess.run([str(exe), str(tiles), str(grid)], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
        assert f": 0 of {tiles * 8} values differ" in run.stdout
