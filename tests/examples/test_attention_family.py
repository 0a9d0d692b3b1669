"""The attention family (specs/examples/attention): one frozen core, eight compositions.

Every composition names the same core package (`build/core.kpkg` from core.cu and core.kc) and
differs only in its load, mask and score; each is accepted from its contracts. The headers beside
the component sources are what `kernlink header` writes now, and each component packs with nvcc
(its sources include the CUDA headers, which NVRTC from PyPI does not bundle) with every symbol
and handle its code reads explained by its contract. Every composition links (`kernlink build`),
and `kernlink parity` proves the link's SASS identical to the one-unit control's, every handle
folded and no call left (the callables inlined).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from checker.handles import handle_problems, symbol_problems
from checker.header import device_header
from contract_lang.parser import parse_file
from kernlink.api import check
from kernlink.cli import main
from linker.sass import find_disassembler
from packing.pack import pack

FAMILY = Path(__file__).resolve().parents[2] / "specs" / "examples" / "attention"
COMPOSITIONS = (
    "attention",
    "attn_noncausal",
    "attn_window",
    "attn_softcap",
    "attn_chunked",
    "attn_alibi",
    "attn_blocksparse",
    "attn_paged",
)
# attention.kp is checked by tests/examples/test_reference_compositions.py; these three differ from
# it in the load (blocksparse, paged) or in a mask with parameters (window); the others only in
# which callables serve the same calls, and run in the slow tier.
CI_COMPOSITIONS = ("attn_window", "attn_blocksparse", "attn_paged")
# Linked and proved in CI: the causal composition and the window mask over the same load (their
# packages are shared); each other composition packs its own load, mask or score (the slow tier).
CI_LINKED = ("attention", "attn_window")
COMPONENTS = (
    "core",
    "load_dense",
    "load_blocksparse",
    "load_paged",
    "epilogue",
    "mask_none",
    "mask_causal",
    "mask_window",
    "mask_chunked",
    "score_none",
    "score_softcap",
    "score_alibi",
)
USE = re.compile(r'^\s*use "([^"]+)" version \S+ from "build/([^"]+)\.kpkg"$', re.M)


def _uses(composition: str) -> dict[str, str]:
    return dict(USE.findall((FAMILY / f"{composition}.kp").read_text()))


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "attention"
    shutil.copytree(FAMILY, folder, ignore=shutil.ignore_patterns("build"))
    return folder


def test_seven_or_more_compositions_share_one_core_package() -> None:
    uses = {c: _uses(c) for c in COMPOSITIONS}
    assert all(u["attn.core"] == "core" for u in uses.values())
    assert all(len(u) == 5 for u in uses.values())
    variants = {tuple(sorted(u.items())) for u in uses.values()}
    assert len(variants) == len(COMPOSITIONS) >= 7


@pytest.mark.parametrize(
    "composition",
    [c if c in CI_COMPOSITIONS else pytest.param(c, marks=pytest.mark.slow) for c in COMPOSITIONS[1:]],
)
def test_composition_is_accepted(tmp_path: Path, composition: str) -> None:
    result = check([_copy(tmp_path) / f"{composition}.kp"])
    assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics if d.is_error]


@pytest.mark.parametrize("component", COMPONENTS)
def test_headers_are_current(component: str) -> None:
    kc = FAMILY / f"{component}.kc"
    (stage,) = parse_file(kc)[0].stages
    peers = parse_file(FAMILY / "load_dense.kc")[0].stages if component == "core" else ()
    header = f"kl_{stage.name.replace('.', '_')}.h"
    assert (FAMILY / header).read_text() == device_header(stage, kc.read_text(), kc.name, peers).text
    assert f'#include "{header}"' in (FAMILY / f"{component}.cu").read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH")
@pytest.mark.parametrize("component", COMPONENTS)
def test_component_packs_with_its_symbols_explained(tmp_path: Path, component: str) -> None:
    folder = _copy(tmp_path)
    packed = pack(folder / f"{component}.cu", folder / f"{component}.kc", tmp_path / "out.kpkg", compiler="nvcc")
    assert symbol_problems(packed.stage, packed.captured, packed.prototypes) == []
    # Every handle the code reads is bound once, with its kind and signature (the core's ping-pong holds
    # both sides of its rendezvous: they read one barrier).
    assert handle_problems(packed.stage, packed.captured, packed.prototypes) == []


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the family for the link tests: its build/ (the packages) shared between them."""
    return _copy(tmp_path_factory.mktemp("family"))


@pytest.mark.toolchain
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH")
@pytest.mark.parametrize(
    "composition", [c if c in CI_LINKED else pytest.param(c, marks=pytest.mark.slow) for c in COMPOSITIONS]
)
def test_composition_links_and_is_proved_identical_to_its_one_unit_control(
    family: Path, tmp_path: Path, composition: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(family)
    kp = f"{composition}.kp"
    built = tmp_path / "build"
    assert main(["build", kp, "-o", str(built), "--no-server", "--compiler", "nvcc", "--color", "never"]) == 0
    assert (built / "kernel.cubin").is_file()
    capsys.readouterr()
    out = tmp_path / "parity"
    assert main(["parity", kp, "-o", str(out), "--front-end", "nvcc", "--format", "json"]) == 0
    said = json.loads(capsys.readouterr().out)
    report = said["report"]
    assert said["proved"] is True and report["verdict"] == "identical" and report["folded"] is True
    assert report["calls"] == []
    [text] = report["text"]
    assert text["function"] == "kl_dispatch" and text["identical"] and text["linked_sha256"] == text["control_sha256"]
    assert (out / "kernel.cubin").read_bytes() == (built / "kernel.cubin").read_bytes()
    if find_disassembler() is not None:
        sass = (out / "linked.sass").read_text()
        assert report["sass"]["identical"] is True and sass == (out / "control.sass").read_text()
        assert "HGMMA" in sass and not re.search(r"\bCALL\b", sass)  # the callables folded: no call left
