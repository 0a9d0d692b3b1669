"""Host providers: declared in the contract, carried by the package, written and called by the link's helpers.

A copy of the ring example where each stage has a provider that fills one pointer field
from the stage's `tiles` and logs its call. The C test program includes the generated
kernel.h and links the providers' real sources from the link directory; only the driver
launch (`cuLaunchKernelEx`) is a stub, which records the params block it was given.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from cuda.bindings import driver

from diagnostics.model import DiagnosticError
from diagnostics.private import read_sealed
from kernlink.api import check_text
from kernlink.builder.incremental import build
from package.kpkg import read_package
from packing.pack import pack
from runtime import host_providers
from runtime.host_providers import Provider, cuda_include, load_library, shared_object
from runtime.launch import GpuSession
from runtime.session import Session
from tests.link.examples import EXAMPLES

PROVIDER = """#include <cuda.h>
#include <stdint.h>
#include <string.h>
extern char kl_test_log[64];
typedef struct {{ CUdeviceptr {ptr}; {middle} uint32_t tiles; {tail} }} block_t;  /* the stage's contract layout */
CUresult {fn}(void* params, CUstream stream) {{
    block_t* p = (block_t*)params;
    (void)stream;
    strcat(kl_test_log, "{tag}");
    p->{ptr} = (CUdeviceptr)({base}u + p->tiles);
    return CUDA_SUCCESS;
}}
"""

MAIN = """#include <stdio.h>
#include <string.h>
#include "kernel.h"
char kl_test_log[64];
static unsigned char seen[sizeof(kl_ring_params)];
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** args, void** extra) {
    (void)config; (void)f; (void)extra;
    strcat(kl_test_log, "launch");
    memcpy(seen, args[0], sizeof seen);
    return CUDA_SUCCESS;
}
int main(void) {
    kl_ring_params params;
    kl_ring_params_init(&params);
    params.ring_loader_tiles = 7;
    params.ring_reduce_tiles = 9;
    if (kl_ring_launch(NULL, NULL, NULL, 4, &params) != CUDA_SUCCESS) return 1;
    kl_ring_params* got = (kl_ring_params*)seen;
    printf("%s %llu %llu\\n", kl_test_log, (unsigned long long)got->ring_loader_src,
           (unsigned long long)got->ring_reduce_dst);
    return 0;
}
"""


def _ring_with_providers(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "ring", root, ignore=shutil.ignore_patterns("build", "host"))
    for stem, ptr, middle, tail, base in (
        ("loader", "src", "", "uint32_t pad;", 0x1000),
        ("reduce", "dst", "uint32_t tile_elems;", "", 0x2000),
    ):
        fn = f"kl_test_{stem}_provide"
        (root / f"{stem}_host.c").write_text(
            PROVIDER.format(ptr=ptr, middle=middle, tail=tail, fn=fn, tag=f"{stem},", base=base)
        )
        kc = root / f"{stem}.kc"
        text = kc.read_text().rstrip()
        assert text.endswith("}")
        kc.write_text(text[:-1] + f'    host provider "{stem}_host.c" fn {fn} fills {ptr}\n}}\n')
    return root / "ring.kp"


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pipeline = _ring_with_providers(tmp_path_factory.mktemp("providers") / "ring")
    steps, result = build(pipeline, pipeline.parent / "out")
    assert result is not None and result.ok, [d.message for d in steps.diagnostics]
    return pipeline.parent / "out"


def test_the_package_carries_the_provider_source(linked: Path) -> None:
    pkg = read_package(linked.parent / "build" / "loader.kpkg")
    assert pkg.payloads["loader_host.c"] == (linked.parent / "loader_host.c").read_bytes()


def test_the_link_writes_and_records_the_providers_in_stage_order(linked: Path) -> None:
    record = json.loads((linked / "link.json").read_text())
    assert [(p["stage"], p["function"], p["fills"], p["offset"]) for p in record["providers"]] == [
        ("ring.loader", "kl_test_loader_provide", ["src"], 0),
        ("ring.reduce", "kl_test_reduce_provide", ["dst"], 16),
    ]
    for p in record["providers"]:
        assert (linked / p["file"]).read_bytes() == (linked.parent / f"{p['stage'].split('.')[1]}_host.c").read_bytes()
    header = (linked / "kernel.h").read_text()
    assert "CUresult kl_test_loader_provide(void* params, CUstream stream);" in header
    assert "filled by host provider kl_test_reduce_provide" in header


@pytest.mark.skipif(cuda_include() is None or shutil.which("cc") is None, reason="no C compiler or cuda.h")
def test_kl_launch_calls_each_provider_in_stage_order_before_the_launch(linked: Path, tmp_path: Path) -> None:
    (tmp_path / "main.c").write_text(MAIN)
    record = json.loads((linked / "link.json").read_text())
    exe = tmp_path / "main"
    subprocess.run(
        [
            "cc",
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{linked}",
            f"-I{cuda_include()}",
            str(tmp_path / "main.c"),
            *(str(linked / p["file"]) for p in record["providers"]),
            "-o",
            str(exe),
        ],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["loader,reduce,launch", str(0x1000 + 7), str(0x2000 + 9)]


@pytest.mark.parametrize(
    ("fills", "problem"),
    [
        ("fills tiles, tmap", "which no params block of the stage declares"),
        ("fills tile_elems", "which the link writes from fact `tile_elems`"),
    ],
)
def test_a_provider_filling_a_field_it_does_not_own_is_l_params(fills: str, problem: str) -> None:
    text = (EXAMPLES / "ring" / "reduce.kc").read_text().rstrip()[
        :-1
    ] + f'    host provider "reduce_host.c" fn kl_reduce_provide {fills}\n}}\n'
    found = [d for d in check_text(text, "reduce.kc").diagnostics if d.code == "L-PARAMS"]
    assert len(found) == 1 and problem in found[0].message, [d.message for d in found]


def test_two_providers_filling_one_field_and_fills_without_fn_are_l_params() -> None:
    base = (EXAMPLES / "ring" / "reduce.kc").read_text().rstrip()[:-1]
    text = base + '    host provider "a.c" fn kl_a fills dst\n    host provider "b.c" fn kl_b fills dst\n}\n'
    found = [d.message for d in check_text(text, "reduce.kc").diagnostics if d.code == "L-PARAMS"]
    assert len(found) == 1 and "which host provider `a.c` fills too" in found[0]
    text = base + '    host provider "a.c" fills dst\n}\n'
    found = [d.message for d in check_text(text, "reduce.kc").diagnostics if d.code == "L-PARAMS"]
    assert len(found) == 1 and "names no `fn`" in found[0]


def test_pack_refuses_a_provider_whose_source_is_missing(tmp_path: Path) -> None:
    pipeline = _ring_with_providers(tmp_path / "ring")
    (pipeline.parent / "loader_host.c").unlink()
    with pytest.raises(DiagnosticError) as err:
        pack(pipeline.parent / "loader.cu", pipeline.parent / "loader.kc", tmp_path / "x.kpkg")
    [diag] = err.value.diagnostics
    assert diag.code == "E-PACK" and "host provider `loader_host.c` of `ring.loader` does not exist" in diag.message


# ----------------------------------------------------------------- the real use: gemm_swiglu's TMA descriptors

GEMM_HOST = EXAMPLES / "gemm_swiglu" / "host" / "gemm_host.c"


@pytest.fixture(scope="module")
def gemm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gemm") / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", root, ignore=shutil.ignore_patterns("build", "host"))
    steps, result = build(root / "gemm_swiglu.kp", root / "out")
    assert result is not None and result.ok, [d.message for d in steps.diagnostics]
    return root / "out"


def test_the_gemm_mainloop_provider_is_linked_and_its_example_compiles(gemm: Path, tmp_path: Path) -> None:
    record = json.loads((gemm / "link.json").read_text())
    [provider] = record["providers"]
    assert (provider["stage"], provider["function"], provider["fills"], provider["offset"]) == (
        "gemm.mainloop",
        "kl_gemm_mainloop_provide",
        ["tmap_a", "tmap_b", "a_box_rows"],
        0,
    )
    include = cuda_include()
    if include is None or shutil.which("cc") is None:
        pytest.skip("no C compiler or cuda.h")
    for source in (GEMM_HOST, gemm / provider["file"]):
        subprocess.run(
            [
                "cc",
                "-std=c99",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-O2",
                f"-I{gemm}",
                f"-I{include}",
                "-c",
                str(source),
                "-o",
                str(tmp_path / "x.o"),
            ],
            check=True,
        )


@pytest.mark.gpu
def test_gemm_host_example_runs_with_its_provider(gemm: Path, tmp_path: Path) -> None:
    include = cuda_include()
    assert include is not None and shutil.which("cc") is not None, "a GPU machine has cc and cuda.h"
    exe = tmp_path / "gemm_host"
    provider = json.loads((gemm / "link.json").read_text())["providers"][0]["file"]
    subprocess.run(
        [
            "cc",
            "-std=c99",
            "-O2",
            f"-I{gemm}",
            f"-I{include}",
            str(GEMM_HOST),
            str(gemm / provider),
            "-lcuda",
            "-lm",
            "-o",
            str(exe),
        ],
        check=True,
    )
    for shape in (("300", "512", "1024"), ("16", "256", "64")):
        run = subprocess.run([str(exe), *shape], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
        assert run.stdout.count(": ok") == 2, run.stdout


def _bf16(values: list[float]) -> bytes:
    out = bytearray()
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        out += struct.pack("<H", ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)
    return bytes(out)


def _floats(data: bytes) -> list[float]:
    return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for (h,) in struct.iter_unpack("<H", data)]


@pytest.mark.gpu
def test_session_calls_the_gemm_provider_at_bind(gemm: Path) -> None:
    m, n, k = 70, 128, 128
    x = _floats(_bf16([((i * 37) % 19 - 9) / 9 for i in range(m * k)]))
    w = _floats(_bf16([((i * 23) % 17 - 8) / (8 * 11.3) for i in range(n * k)]))
    want = []
    for r in range(m):
        row = x[r * k : (r + 1) * k]
        for j in range(n // 2):
            g = 32 * (j // 16) + j % 16
            gate = sum(a * b for a, b in zip(row, w[g * k : (g + 1) * k], strict=True))
            up = sum(a * b for a, b in zip(row, w[(g + 16) * k : (g + 17) * k], strict=True))
            want.append(gate / (1 + math.exp(-gate)) * up)
    with GpuSession() as gpu, Session(gemm) as session:
        dx, dw, out = gpu.upload(_bf16(x)), gpu.upload(_bf16(w)), gpu.upload(b"\xff" * (m * n))
        with pytest.raises(DiagnosticError, match="filled by a host provider"):
            session.bind(tmap_a=0)
        session.bind(a=dx, b=dw, k_tiles=k // 64, n=n, out=out, ldo=n // 2, rows=m)
        (err,) = driver.cuLaunchKernel(
            session._function,
            (m + 127) // 128,
            n // 128,
            1,
            session.linked.threads,
            1,
            1,
            session.linked.dynamic_smem,
            session.stream,
            session._params,
            0,
        )
        assert err == driver.CUresult.CUDA_SUCCESS
        session.synchronize()
        got = _floats(gpu.download(out))
    diff = math.sqrt(sum((a - b) ** 2 for a, b in zip(got, want, strict=True)))
    assert not any(math.isnan(v) for v in got)
    assert diff / math.sqrt(sum(v * v for v in want)) <= 1e-2


def test_editing_a_provider_repacks_its_stage(tmp_path: Path) -> None:
    pipeline = _ring_with_providers(tmp_path / "ring")
    steps, result = build(pipeline, tmp_path / "out")
    assert result is not None and result.ok
    provider = pipeline.parent / "reduce_host.c"
    provider.write_text(provider.read_text().replace(f"{0x2000}u", f"{0x3000}u"))
    steps, result = build(pipeline, tmp_path / "out")
    assert result is not None and result.ok
    assert {s.package.name: s.action for s in steps.steps} == {"loader.kpkg": "reused", "reduce.kpkg": "packed"}
    assert (tmp_path / "out" / "provider_ring_reduce_reduce_host.c").read_text() == provider.read_text()


NEEDS_CC = pytest.mark.skipif(cuda_include() is None or shutil.which("cc") is None, reason="no C compiler or cuda.h")


@NEEDS_CC
def test_session_builds_the_providers_once_into_a_shared_object(
    linked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    record = json.loads((linked / "link.json").read_text())
    providers = [Provider.from_json(p) for p in record["providers"]]
    library = shared_object(linked, providers)
    [entry] = (tmp_path / "cache").glob("provider-*.so")
    assert library[:4] == b"\x7fELF" and read_sealed(tmp_path / "cache", entry.name) == library
    (tmp_path / "lib.so").write_bytes(library)
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(tmp_path / "lib.so")], capture_output=True, text=True)
    assert "kl_test_loader_provide" in symbols.stdout and "kl_test_reduce_provide" in symbols.stdout
    monkeypatch.setattr(host_providers, "_compile", lambda *_: pytest.fail("compiled again"))
    assert shared_object(linked, providers) == library  # from the cache: the compiler is not run


@NEEDS_CC
def test_a_provider_that_does_not_compile_is_e_run(
    linked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    record = json.loads((linked / "link.json").read_text())
    broken = tmp_path / "broken"
    shutil.copytree(linked, broken)
    (broken / record["providers"][0]["file"]).write_text("this is not C\n")
    record["providers"][0]["sha256"] = hashlib.sha256(b"this is not C\n").hexdigest()
    providers = [Provider.from_json(p) for p in record["providers"]]
    with pytest.raises(DiagnosticError) as err:
        shared_object(broken, providers)
    assert err.value.diagnostics[0].code == "E-RUN" and "do not compile" in err.value.diagnostics[0].message


# ----------------------------------------------------------------- what runs is what the link recorded (issue 32)

RAN = "ran.txt"
TINY = """#include <cuda.h>
#include <stdint.h>
CUresult kl_tiny_provide(void* params, CUstream stream) {
    (void)stream;
    *(uint32_t*)params = 0x600du;
    return CUDA_SUCCESS;
}
"""
PLANTED = """#include <stdio.h>
__attribute__((constructor)) static void planted(void) { FILE* f = fopen("%s", "w"); if (f) fclose(f); }
int kl_tiny_provide(void* params, void* stream) { (void)params; (void)stream; return 0; }
"""


def _tiny(folder: Path, text: str = TINY) -> list[Provider]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "provider_s_tiny.c").write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return [Provider("s", "kl_tiny_provide", "provider_s_tiny.c", ("x",), 0, digest)]


def _call(library: bytes) -> int:
    fn = load_library(library).kl_tiny_provide
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]
    block = ctypes.c_uint32(0)
    assert fn(ctypes.addressof(block), None) == 0
    return block.value


@NEEDS_CC
def test_a_provider_replaced_after_the_link_is_refused_before_it_is_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    providers = _tiny(tmp_path / "link")
    assert _call(shared_object(tmp_path / "link", providers)) == 0x600D
    (tmp_path / "link" / "provider_s_tiny.c").write_text(PLANTED % (tmp_path / RAN))
    with pytest.raises(DiagnosticError) as err:
        shared_object(tmp_path / "link", providers)
    [diag] = err.value.diagnostics
    assert diag.code == "L-INTEGRITY" and "provider_s_tiny.c" in diag.message and "link.json" in diag.message
    assert not (tmp_path / RAN).exists()
    unrecorded = [dataclasses.replace(providers[0], sha256=None)]
    with pytest.raises(DiagnosticError, match="records no SHA-256"):
        shared_object(tmp_path / "link", unrecorded)


@NEEDS_CC
@pytest.mark.parametrize("plant", ["planted", "truncated", "resealed"])
def test_a_planted_or_damaged_compiled_provider_is_rebuilt_never_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str
) -> None:
    """The attacks of issue 32: a planted shared object was dlopen'ed (its constructor ran), a truncated one
    killed the process with SIGBUS."""
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    providers = _tiny(tmp_path / "link")
    good = shared_object(tmp_path / "link", providers)
    [entry] = (tmp_path / "cache").glob("provider-*.so")
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "p.c").write_text(PLANTED % (tmp_path / RAN))
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(evil / "p.so"), str(evil / "p.c")], check=True)
    whole = entry.read_bytes()
    if plant == "planted":
        entry.write_bytes((evil / "p.so").read_bytes())
    elif plant == "truncated":
        entry.write_bytes(whole[: len(whole) // 3])
    else:  # the sealed header of the real entry in front of other bytes
        entry.write_bytes(whole[: len(whole) - len(good)] + (evil / "p.so").read_bytes())
    library = shared_object(tmp_path / "link", providers)
    assert library == good and _call(library) == 0x600D
    assert not (tmp_path / RAN).exists(), "a planted shared object was loaded"
    assert read_sealed(tmp_path / "cache", entry.name) == good


# ----------------------------------------------------------------- host code: announced, checked, refusable


def _kernlink(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernlink", *args, "--color", "never"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def test_link_and_build_print_and_map_every_provider_with_its_owner_and_hash(linked: Path, tmp_path: Path) -> None:
    record = json.loads((linked / "link.json").read_text())
    digests = {p["stage"]: hashlib.sha256((linked / p["file"]).read_bytes()).hexdigest() for p in record["providers"]}
    assert {p["stage"]: p["sha256"] for p in record["providers"]} == digests
    text = (linked / "link.map").read_text()
    host = text[text.index("\nhost  ") : text.index("\nsmem  ")]
    for p in record["providers"]:
        assert f"{p['file']}" in host and f"{p['stage']}: fn {p['function']} fills" in host
        assert f"sha256 {p['sha256']}" in host
    pipeline = linked.parent
    for verb in (["link", "ring.kp", "-o", "again"], ["build", "ring.kp", "-o", "again", "--no-server"]):
        done = _kernlink(verb, pipeline)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = [line for line in done.stdout.splitlines() if line.startswith("host code: ")]
        assert lines == [
            f"host code: `{p['function']}` of `{p['stage']}` in again/{p['file']} (sha256 {p['sha256']}); "
            "kernel.h and kernlink.Session compile and run it before the kernel"
            for p in record["providers"]
        ], done.stdout


def test_a_link_without_providers_says_it_carries_no_host_code(tmp_path: Path) -> None:
    from kernlink.api import link
    from tests.link.examples import build_example

    assert link([build_example("ring", tmp_path)], tmp_path / "out").ok
    text = (tmp_path / "out" / "link.map").read_text()
    assert "no stage calls a host provider: the link carries no host code" in text
    assert "providers" not in json.loads((tmp_path / "out" / "link.json").read_text())


@pytest.mark.parametrize("verb", ["check", "link", "build"])
def test_no_host_code_refuses_each_provider_by_its_stage(linked: Path, verb: str) -> None:
    pipeline = linked.parent
    out = pipeline / f"refused-{verb}"
    args = {"check": [], "link": ["-o", out.name], "build": ["-o", out.name, "--no-server"]}[verb]
    done = _kernlink([verb, "ring.kp", *args, "--no-host-code"], pipeline)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    errors = [line for line in output.splitlines() if line.startswith("error[")]
    assert errors == [
        "error[E-HOST-CODE]: `ring.loader` calls the host provider `loader_host.c` (fn kl_test_loader_provide); "
        "--no-host-code refuses host code",
        "error[E-HOST-CODE]: `ring.reduce` calls the host provider `reduce_host.c` (fn kl_test_reduce_provide); "
        "--no-host-code refuses host code",
    ], output
    assert not (out / "kernel.cubin").exists() and not (out / "kernel.h").exists()
    assert not list(out.glob("provider_*")) if out.exists() else True


def test_no_host_code_accepts_a_composition_without_host_code_and_names_a_host_library(tmp_path: Path) -> None:
    from kernlink.api import check

    stage = """stage "demo.host" version "1.0.0" {
    target sm_90a
    role main entry demo_main warps 1
    launch fixed threads 32
    params Args size 8 align 8 {
        x: ptr @ 0
    }
PROVIDERS}
"""
    plain = tmp_path / "plain.kc"
    plain.write_text(stage.replace("PROVIDERS", ""))
    assert check([plain], host_code=False).accepted
    hosted = tmp_path / "hosted.kc"
    hosted.write_text(
        stage.replace(
            "PROVIDERS", '    host provider "a.c" fn kl_a fills x\n    host provider "libx.so" header "x.h"\n'
        )
    )
    assert not [d for d in check([hosted]).diagnostics if d.is_error]
    found = [d for d in check([hosted], host_code=False).diagnostics if d.is_error]
    assert [(d.code, d.primary.span.line if d.primary else None) for d in found] == [
        ("E-HOST-CODE", 8),
        ("E-HOST-CODE", 9),
    ]
    assert "needs the host library `libx.so`" in found[1].message


def test_the_header_records_each_provider_hash_and_the_check_its_build_runs(linked: Path, tmp_path: Path) -> None:
    """kernel.h's build step: the command the header gives checks every provider against the hash it records."""
    if shutil.which("sha256sum") is None:
        pytest.skip("no sha256sum")
    copy = tmp_path / "out"
    shutil.copytree(linked, copy)
    header = (copy / "kernel.h").read_text()
    [command] = [line.removeprefix(" *     ") for line in header.splitlines() if "sha256sum --check" in line]
    record = json.loads((copy / "link.json").read_text())
    for p in record["providers"]:
        assert f" * sha256 {p['sha256']}  {p['file']}" in header
    done = subprocess.run(["sh", "-c", command], cwd=copy, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.count(": OK") == 2, done.stdout + done.stderr
    replaced = copy / record["providers"][1]["file"]
    replaced.write_text(replaced.read_text() + "/* changed after the link */\n")
    done = subprocess.run(["sh", "-c", command], cwd=copy, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and f"{replaced.name}: FAILED" in done.stdout, done.stdout + done.stderr


def test_inspect_shows_each_provider_source(linked: Path) -> None:
    package = linked.parent / "build" / "loader.kpkg"
    done = _kernlink(["inspect", str(package)], linked.parent)
    assert done.returncode == 0, done.stderr
    source = (linked.parent / "loader_host.c").read_text()
    assert "provider loader_host.c: fn kl_test_loader_provide fills src" in done.stdout
    assert f"sha256 {hashlib.sha256(source.encode()).hexdigest()}; its source:" in done.stdout
    assert source.strip().splitlines()[-1] in done.stdout
    view = json.loads(_kernlink(["inspect", str(package), "--format", "json"], linked.parent).stdout)
    [provider] = view["providers"]
    assert (provider["file"], provider["source"]) == ("loader_host.c", source)


def test_inspect_says_when_a_provider_has_no_readable_source() -> None:
    from contract_lang import ast as A
    from contract_lang.parser import parse_text
    from kernlink.cmd_inspect import _provider

    text = (EXAMPLES / "ring" / "reduce.kc").read_text().rstrip()[
        :-1
    ] + '    host provider "p.c" fn kl_p fills dst\n}\n'
    [provider] = [i for i in parse_text(text, "reduce.kc").stages[0].items if isinstance(i, A.HostProvider)]
    assert (_provider(provider, {})["source"], _provider(provider, {})["size"]) == (None, None)
    compiled = _provider(provider, {"p.c": b"\x7fELF\0\0binary"})
    assert (compiled["source"], compiled["size"]) == (None, 12)
    assert _provider(provider, {"p.c": b"int x;\n"})["source"] == "int x;\n"


def test_session_refuses_a_provider_replaced_after_the_link(
    linked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack of issue 32: `Session` compiled and loaded a provider `.c` replaced after the link."""
    from tests.link.test_launch_config import FakeDriver

    FakeDriver(monkeypatch)  # no GPU needed: the refusal comes before any driver call that matters
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "out"
    shutil.copytree(linked, copy)
    record = json.loads((copy / "link.json").read_text())
    (copy / record["providers"][1]["file"]).write_text(PLANTED % (tmp_path / RAN))
    with pytest.raises(DiagnosticError) as err:
        Session(copy)
    [diag] = err.value.diagnostics
    assert diag.code == "L-INTEGRITY" and record["providers"][1]["file"] in diag.message
    assert not (tmp_path / RAN).exists() and not list((tmp_path / "cache").glob("provider-*"))
