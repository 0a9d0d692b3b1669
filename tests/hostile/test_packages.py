"""A package is code from another owner (issue 32 items 1-4): each attack, and its clean outcome.

1. A package rewritten to 1 KiB slots (contract, `code.ptx`, its facts; hashes recomputed) while its
   LTO IR copies 32 KiB per fill: a plain check reads a consistent contract and PTX and accepts;
   `--strict`/`--require-binding` refuse it at check, and every link refuses it (the binding:
   packing/binding.py). With the binding bypassed, the audit catches what the linked code does.
2. A recorded compile option that makes the compiler write a file: refused on reading, no file
   is written.
3. A planted binding verdict does not pass a forged package.
4. `kernlink pack` carries no symbolic link and no file from outside the component's folder.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checker.conformance import FACTS_VERSION, derive
from kernlink.api import check, link
from kernlink.cli import main
from package.kpkg import PAYLOADS_KEY, pack_bytes, parse_package, read_package
from packing import binding
from packing.pack import PackResult
from tests.link.examples import EXAMPLES

pytestmark = pytest.mark.toolchain
Edit = Callable[[dict[str, Any], dict[str, bytes]], None]


def _rewrite(path: Path, *edits: Edit) -> None:
    """Edit a package's manifest and payloads and write it back with every hash recomputed."""
    pkg = parse_package(path.read_bytes(), name=str(path))
    manifest = json.loads(json.dumps({k: v for k, v in pkg.manifest.items() if k != PAYLOADS_KEY}))
    payloads = dict(pkg.payloads)
    for edit in edits:
        edit(manifest, payloads)
    path.write_bytes(pack_bytes(manifest, payloads))


def _ring(tmp_path: Path, packed: dict[str, PackResult]) -> Path:
    """The ring example with its two packages; no `loader.kc` beside it (the package's contract is the one checked)."""
    root = tmp_path / "ring"
    shutil.copytree(EXAMPLES / "ring", root, ignore=shutil.ignore_patterns("build", "host", "loader.kc"))
    (root / "build").mkdir()
    for name in ("loader", "reduce"):
        shutil.copy(packed[f"ring/{name}"].path, root / "build" / f"{name}.kpkg")
    return root / "ring.kp"


def _one_kib(manifest: dict[str, Any], payloads: dict[str, bytes]) -> None:
    """The contract and the PTX say 1 KiB slots, and the facts are the new PTX's: all consistent but the LTO IR."""
    manifest["contract"] = manifest["contract"].replace("32KiB", "1KiB")
    ptx = payloads["code.ptx"].decode().replace("32768", "1024")
    payloads["code.ptx"] = ptx.encode()
    manifest["conformance"] = derive(ptx).as_json()


def _no_source(_: dict[str, Any], payloads: dict[str, bytes]) -> None:
    del payloads["source.cu"]


def _nvcc(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
    manifest["compile"]["compiler"] = "nvcc"


def _ptx_options(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
    manifest["compile"]["ptx"]["options"] = ["-lto", "-ptx"]


def _no_compile(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
    del manifest["compile"]


#: the attack's variants, and the errors a plain link gives for each
ATTACKS: dict[str, tuple[Edit, list[str]]] = {
    "no-source": (_no_source, ["L-INTEGRITY"]),  # its PTX is not what its LTO IR lowers to
    "nvcc": (_nvcc, ["L-INTEGRITY"]),
    "ptx-options": (_ptx_options, ["L-INTEGRITY"]),  # its source rebuilds to other payloads
    "no-compile": (_no_compile, ["L-CONFORM", "L-CONFORM"]),  # unbound: its lowered code is checked at link
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``KERNLINK_CACHE`` with the binding cache on, and no binding verdict kept in this process."""
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINK_NO_BINDING_CACHE", raising=False)
    binding.forget()
    (tmp_path / "cache").mkdir(mode=0o700)  # a private folder, as the cache makes it (specs/security.md, Caches)
    return tmp_path / "cache"


def _errors(diagnostics: Any) -> list[str]:
    return sorted(d.code for d in diagnostics if d.is_error)


@pytest.mark.parametrize("variant", sorted(ATTACKS))
def test_a_package_whose_checked_ptx_is_not_its_lto_ir_never_links(
    tmp_path: Path, packed: dict[str, PackResult], variant: str
) -> None:
    pipeline = _ring(tmp_path, packed)
    edit, at_link = ATTACKS[variant]
    _rewrite(pipeline.parent / "build" / "loader.kpkg", _one_kib, edit)
    assert check([pipeline]).accepted  # the contract and the PTX agree; a plain check does not bind
    for policy in ({"strict": True}, {"require_binding": True}):
        refused = check([pipeline], **policy)
        assert not refused.accepted and "L-INTEGRITY" in _errors(refused.diagnostics), policy
        linked = link([pipeline], tmp_path / "strict", **policy)
        assert not linked.ok and not (tmp_path / "strict" / "kernel.cubin").exists()
    linked = link([pipeline], tmp_path / "out")
    assert _errors(linked.diagnostics) == at_link, [(d.code, d.message) for d in linked.diagnostics]
    assert not linked.ok and not (tmp_path / "out" / "kernel.cubin").exists()
    if variant == "no-compile":
        assert all("32768" in d.message and "1024" in d.message for d in linked.diagnostics if d.is_error)
        assert [d.code for d in linked.diagnostics if d.code == "I-BINDING"] == ["I-BINDING"]


def test_with_the_binding_bypassed_the_audit_catches_32_kib_copies_into_1_kib_slots(
    tmp_path: Path, packed: dict[str, PackResult], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import linker.link as link_module

    pipeline = _ring(tmp_path, packed)
    _rewrite(pipeline.parent / "build" / "loader.kpkg", _one_kib, _no_source)
    monkeypatch.setattr(link_module, "rebuild_problems", lambda *_, **__: [])  # the linker before issue 32
    linked = link([pipeline], tmp_path / "audited")
    errors = [d for d in linked.diagnostics if d.is_error]
    assert not linked.ok and {d.code for d in errors} == {"L-LINK"}
    copy = "copies 32768 B into shared memory in one bulk copy; the largest piece the map places is 1024 B"
    assert any(copy in d.message for d in errors)
    monkeypatch.setattr(link_module, "_audit", lambda *_: 0.0)  # and no audit at link: `kernlink audit` finds it
    assert link([pipeline], tmp_path / "unaudited").ok
    capsys.readouterr()
    assert main(["audit", str(tmp_path / "unaudited"), "--color", "never"]) == 1
    assert copy in capsys.readouterr().out


# ----------------------------------------------------------------- 2. replayed options


@pytest.mark.parametrize("option", ["--create-pch", "--time", "--fdevice-time-trace"])
def test_a_recorded_option_that_writes_a_file_is_refused_and_writes_nothing(
    tmp_path: Path, packed: dict[str, PackResult], capsys: pytest.CaptureFixture[str], option: str
) -> None:
    pipeline = _ring(tmp_path, packed)
    kept, fresh = tmp_path / "notes.txt", tmp_path / "trace.json"
    kept.write_text("the user's file\n")
    target = fresh if option == "--fdevice-time-trace" else kept

    def record(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
        manifest["compile"]["options"].append(f"{option}={target}")

    _rewrite(pipeline.parent / "build" / "loader.kpkg", record)
    capsys.readouterr()
    assert main(["link", str(pipeline), "-o", str(tmp_path / "out"), "--color", "never"]) == 1
    text = capsys.readouterr().out
    assert "error[L-INTEGRITY]" in text and f"records the compile option `{option}={target}`" in text
    assert kept.read_text() == "the user's file\n" and not fresh.exists()
    assert not (tmp_path / "out" / "kernel.cubin").exists()


def test_the_rebuild_never_replays_an_option_off_the_allowlist(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    """Defence in depth: a reader that skips the manifest check (the raw package) still gets no rebuild."""
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)
    _rewrite(path, lambda m, _: m["compile"]["options"].append(f"--create-pch={tmp_path / 'x.pch'}"))
    stage = binding.Alone  # the type a rebuild would run
    found = binding.rebuild_inputs(read_package(path), packed["ring/loader"].stage)
    assert not isinstance(found, stage) and "--create-pch" in found


# ----------------------------------------------------------------- 3. planted binding verdicts


def _plant(cache: Path, body: dict[str, Any], mac: str) -> Path:
    folder = cache / "binding"
    folder.mkdir(mode=0o700, exist_ok=True)
    entry = binding._entry(folder, body)
    entry.write_text(json.dumps({**body, "mac": mac}, sort_keys=True))
    return entry


def test_a_planted_binding_verdict_does_not_link_a_forged_package(
    tmp_path: Path, packed: dict[str, PackResult], cache: Path
) -> None:
    pipeline = _ring(tmp_path, packed)
    path = pipeline.parent / "build" / "loader.kpkg"
    _rewrite(path, _one_kib, _no_source)
    forged = read_package(path)
    stage = packed["ring/loader"].stage
    from contract_lang.printer import print_node

    text = print_node(stage)
    (cache / "binding").mkdir(mode=0o700)
    (cache / "binding" / f"{hashlib.sha256(forged.sha256.encode()).hexdigest()}.ok").write_text("ok\n")  # old style
    for mode in ("lowered", "rebuilt"):
        body = binding._body(forged, text, mode)
        _plant(cache, body, hmac.new(b"not the user's secret", b"x", hashlib.sha256).hexdigest())
    binding.forget()
    linked = link([pipeline], tmp_path / "out")
    assert _errors(linked.diagnostics) == ["L-INTEGRITY"] and not (tmp_path / "out" / "kernel.cubin").exists()


def test_a_genuine_verdict_is_used_only_for_its_own_inputs_and_under_a_private_secret(
    tmp_path: Path, packed: dict[str, PackResult], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)
    stage = packed["ring/loader"].stage
    assert binding.decide(str(path), stage, rebuild=False).bound
    lowered: list[bytes] = []
    real = binding.lower
    monkeypatch.setattr(binding, "lower", lambda lto, target: lowered.append(lto) or real(lto, target))
    binding.forget()
    assert binding.decide(str(path), stage, rebuild=False).bound and lowered == []  # from the disk, verified
    # the genuine entry copied under a forged package's name: its hashes are not the forgery's
    (entry,) = (cache / "binding").glob("*.json")
    _rewrite(path, _one_kib, _no_source)
    from contract_lang.printer import print_node

    body = binding._body(read_package(path), print_node(stage), "lowered")
    shutil.copy(entry, binding._entry(cache / "binding", body))
    binding.forget()
    assert not binding.decide(str(path), stage, rebuild=False).bound and len(lowered) == 1
    # a secret others can read is no secret: the cache is not used at all
    shutil.copy(packed["ring/loader"].path, path)
    os.chmod(cache / "binding" / "key", 0o644)
    binding.forget()
    assert binding.decide(str(path), stage, rebuild=False).bound and len(lowered) == 2


# ----------------------------------------------------------------- 4. what pack carries


def _component(tmp_path: Path, example: str) -> Path:
    folder = tmp_path / example
    shutil.copytree(EXAMPLES / example, folder, ignore=shutil.ignore_patterns("build", "host", "sm100"))
    (tmp_path / "elsewhere").mkdir()
    return folder


def _pack(source: Path, contract: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["pack", str(source), "--contract", str(contract), "--color", "never"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    ("example", "stem", "file", "what"),
    [
        ("ring", "loader", "loader.cu", "the source"),
        ("ring", "loader", "kl_ring_loader.h", "the header"),
        ("gemm_swiglu", "mainloop", "mainloop_host.c", "the host provider"),
    ],
)
def test_pack_refuses_a_symbolic_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str, stem: str, file: str, what: str
) -> None:
    folder = _component(tmp_path, example)
    outside = tmp_path / "elsewhere" / file
    shutil.move(folder / file, outside)
    os.symlink(outside, folder / file)
    code, text = _pack(folder / f"{stem}.cu", folder / f"{stem}.kc", capsys)
    assert code == 2, text
    assert "error[E-IO]" in text and f"refusing to pack {what} `" in text and f"{file}`: it is a symbolic link" in text
    assert not (folder / "build").exists()


def test_pack_refuses_a_host_provider_outside_the_components_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gemm = _component(tmp_path, "gemm_swiglu")
    shutil.move(gemm / "mainloop_host.c", gemm.parent / "mainloop_host.c")
    contract = gemm / "mainloop.kc"
    contract.write_text(contract.read_text().replace('"mainloop_host.c"', '"../mainloop_host.c"'))
    code, text = _pack(gemm / "mainloop.cu", contract, capsys)
    assert code == 2 and "it lies outside the component's folder" in text and "mainloop_host.c" in text
    assert not (gemm / "build").exists()


@pytest.mark.parametrize(
    "facts",
    [
        [5],
        ["a fact"],
        [{"kind": "wait"}],
        [{"kind": "wait", "function": "f", "line": 1, "opcode": "x", "operands": 3}],
        [{"kind": "wait", "function": "f", "line": 1, "opcode": "x", "operands": [], "when": [["1:t"]]}],
    ],
    ids=["a-number", "a-string", "missing-keys", "operands-not-a-list", "condition-without-expression"],
)
def test_malformed_recorded_facts_are_a_malformed_package_not_a_crash(
    tmp_path: Path, packed: dict[str, PackResult], facts: list[Any]
) -> None:
    """The manifest's `conformance` facts are read before they are compared with the facts derived from
    the package's PTX: whatever shape a crafted entry has, the package is L-INTEGRITY (malformed)."""
    kp = _ring(tmp_path, packed)

    def planted(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
        manifest["conformance"] = {"version": FACTS_VERSION, "facts": facts}

    _rewrite(kp.parent / "build" / "loader.kpkg", planted)
    result = check([kp])
    refused = [d for d in result.diagnostics if d.code == "L-INTEGRITY"]
    assert len(refused) == 1 and "`conformance` is malformed" in refused[0].message + " ".join(refused[0].notes)
    # root cause first: no `loader.kc` is beside the pipeline, and the refused package's stage is not "missing"
    assert _errors(result.diagnostics) == ["L-INTEGRITY"]
