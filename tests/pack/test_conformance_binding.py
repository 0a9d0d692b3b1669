"""The manifest is bound to the code: conformance facts recorded at pack, derived again on load.

Issue 16 item 3: a manifest edited to disagree with its own payload — its hashes
recomputed, so the package's integrity checks pass — must not pass check and link.
Issue 12 item 6: a component that runs its own `setmaxnreg` is rejected where the
dispatch kernel sets the budgets.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checker.clauses import l_integrity
from checker.conformance import MANIFEST_KEY, PTX_PAYLOAD, derive
from diagnostics.model import DiagnosticError
from kernlink.api import check, link
from package.kpkg import PAYLOADS_KEY, pack_bytes, parse_package
from package.manifest import read_stage_package
from packing.pack import PackResult, pack
from tests.link.examples import EXAMPLES

CASES = Path(__file__).resolve().parents[1] / "conformance" / "cases"


def _rewrite(path: Path, edit: Callable[[dict[str, Any], dict[str, bytes]], None]) -> None:
    """Edit a package's manifest/payloads and write it back with every hash recomputed."""
    pkg = parse_package(path.read_bytes(), name=str(path))
    manifest = {k: v for k, v in pkg.manifest.items() if k != PAYLOADS_KEY}
    manifest = json.loads(json.dumps(manifest))
    payloads = dict(pkg.payloads)
    edit(manifest, payloads)
    path.write_bytes(pack_bytes(manifest, payloads))


def _ring(tmp_path: Path, packed: dict[str, PackResult]) -> Path:
    root = tmp_path / "ring"
    shutil.copytree(EXAMPLES / "ring", root)
    (root / "build").mkdir()
    for name in ("loader", "reduce"):
        shutil.copy(packed[f"ring/{name}"].path, root / "build" / f"{name}.kpkg")
    return root / "ring.kp"


def test_pack_records_the_facts_and_the_ptx_they_come_from(packed: dict[str, PackResult]) -> None:
    stage = read_stage_package(packed["ring/loader"].path)
    assert stage.captured.ptx is not None
    assert stage.manifest[MANIFEST_KEY] == derive(stage.captured.ptx).as_json()
    kinds = {f["kind"] for f in stage.manifest[MANIFEST_KEY]["facts"]}
    assert {"mbarrier-init", "expect-tx", "bulk-copy"} <= kinds


def test_a_contract_edited_to_claim_1kib_slots_is_rejected(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    pipeline = _ring(tmp_path, packed)
    assert check([pipeline]).accepted

    def shrink(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
        manifest["contract"] = manifest["contract"].replace("32KiB", "1KiB")

    _rewrite(pipeline.parent / "build" / "loader.kpkg", shrink)
    result = check([pipeline])
    conform = [d for d in result.diagnostics if d.code == "L-CONFORM"]
    assert {dict(d.data)["check"] for d in conform} == {"expect-tx", "copy-bytes"}, [
        (d.code, d.message) for d in result.diagnostics
    ]
    assert all("32768" in d.message and "1024" in d.message for d in conform)


def test_facts_edited_in_the_manifest_are_l_integrity(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)

    def forge(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
        for fact in manifest[MANIFEST_KEY]["facts"]:
            for role, operand in fact["operands"]:
                if fact["kind"] == "bulk-copy" and role == "bytes":
                    operand[1] = 1024

    _rewrite(path, forge)
    with pytest.raises(DiagnosticError) as err, l_integrity.worded():
        read_stage_package(path)
    (diag,) = err.value.diagnostics
    assert diag.code == "L-INTEGRITY" and "code facts" in diag.message


def test_a_swapped_ptx_payload_is_l_integrity(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)
    other = read_stage_package(packed["ring/reduce"].path).captured.ptx
    assert other is not None

    def swap(_: dict[str, Any], payloads: dict[str, bytes]) -> None:
        payloads[PTX_PAYLOAD] = other.encode()

    _rewrite(path, swap)
    with pytest.raises(DiagnosticError) as err, l_integrity.worded():
        read_stage_package(path)
    assert [d.code for d in err.value.diagnostics] == ["L-INTEGRITY"]


def test_facts_without_their_ptx_are_l_integrity(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)

    def drop(_: dict[str, Any], payloads: dict[str, bytes]) -> None:
        del payloads[PTX_PAYLOAD]

    _rewrite(path, drop)
    with pytest.raises(DiagnosticError) as err, l_integrity.worded():
        read_stage_package(path)
    assert [d.code for d in err.value.diagnostics] == ["L-INTEGRITY"]


def _ring_with_setmaxnreg(tmp_path: Path, packed: dict[str, PackResult]) -> Path:
    """The ring example whose loader lowers its own registers, as CUTLASS collectives do."""
    pipeline = _ring(tmp_path, packed)
    source = pipeline.parent / "loader.cu"
    text = source.read_text()
    entry = "    const unsigned warp = (threadIdx.x >> 5) - kl_ring_loader_load_warp0();"
    assert entry in text
    source.write_text(
        text.replace(entry, '    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");\n' + entry)
    )
    pack(source, pipeline.parent / "loader.kc", pipeline.parent / "build" / "loader.kpkg")
    return pipeline


def test_component_setmaxnreg_is_rejected_at_check_and_link(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    """Issue 12.6: a component's own setmaxnreg beside the dispatch's budgets (40/240/240 hung the H200)."""
    pipeline = _ring_with_setmaxnreg(tmp_path, packed)
    result = check([pipeline])
    errors = [d for d in result.diagnostics if d.is_error]
    assert [(d.code, dict(d.data).get("check")) for d in errors] == [("L-CONFORM", "setmaxnreg")]
    files = sorted(lab.span.file.rsplit("/", 2)[-2:][1] for lab in errors[0].labels)
    assert files == ["loader.kc", "loader.kpkg!code.ptx"], files  # the contract as the user wrote it
    linked = link([pipeline], tmp_path / "out")
    assert not linked.ok and not (tmp_path / "out" / "kernel.cubin").exists()


def test_an_lto_ir_swapped_for_other_code_fails_the_link(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    """The conforming PTX and facts stay; the linked object is another component's: L-INTEGRITY at link."""
    pipeline = _ring(tmp_path, packed)
    other = parse_package(packed["ring/reduce"].path.read_bytes()).payloads["lto.ir"]

    def swap(_: dict[str, Any], payloads: dict[str, bytes]) -> None:
        payloads["lto.ir"] = other

    _rewrite(pipeline.parent / "build" / "loader.kpkg", swap)
    assert check([pipeline]).accepted  # the check reads the contract and the PTX, both intact
    result = link([pipeline], tmp_path / "out")
    errors = [d for d in result.diagnostics if d.is_error]
    assert [d.code for d in errors] == ["L-INTEGRITY"]
    assert (
        "the `lto.ir` payload of" in errors[0].message
        and "is not what its `source.cu` compiles to" in errors[0].message
    )


def test_a_package_that_cannot_be_rebuilt_is_still_bound_by_its_lowering(
    tmp_path: Path, packed: dict[str, PackResult]
) -> None:
    """Issue 32 item 1: the compiler a manifest names does not decide the binding; its LTO IR does."""
    pipeline = _ring(tmp_path, packed)

    def older(manifest: dict[str, Any], _: dict[str, bytes]) -> None:
        manifest["compile"]["compiler"] = "nvcc"

    _rewrite(pipeline.parent / "build" / "loader.kpkg", older)
    result = link([pipeline], tmp_path / "out", require_binding=True)
    assert result.ok, [(d.code, d.message) for d in result.diagnostics]
    assert [d for d in result.diagnostics if d.code == "I-BINDING"] == []


def _other_nvjitlink(manifest: dict[str, Any], payloads: dict[str, bytes]) -> None:
    """A package whose PTX another nvJitLink lowered: here its LTO IR lowers to other PTX (a comment differs)."""
    manifest["compile"]["ptx"]["nvjitlink"] = "12.8"
    payloads[PTX_PAYLOAD] = payloads[PTX_PAYLOAD].replace(b"//\n", b"// lowered by nvJitLink 12.8\n", 1)
    del payloads["source.cu"]


def test_a_package_that_cannot_be_bound_is_a_note_and_its_linked_code_is_checked(
    tmp_path: Path, packed: dict[str, PackResult]
) -> None:
    pipeline = _ring(tmp_path, packed)
    _rewrite(pipeline.parent / "build" / "loader.kpkg", _other_nvjitlink)
    result = link([pipeline], tmp_path / "out")
    assert result.ok, [(d.code, d.message) for d in result.diagnostics]
    (note,) = [d for d in result.diagnostics if d.code == "I-BINDING"]
    assert "loader.kpkg" in note.message and "lowered by nvJitLink 12.8" in note.message
    assert any("checked against its contract at link" in n for n in note.notes)


@pytest.mark.parametrize("policy", ["strict", "require_binding"])
def test_strict_and_require_binding_refuse_a_package_that_cannot_be_bound(
    tmp_path: Path, packed: dict[str, PackResult], policy: str
) -> None:
    pipeline = _ring(tmp_path, packed)
    _rewrite(pipeline.parent / "build" / "loader.kpkg", _other_nvjitlink)
    checked = check([pipeline], **{policy: True})
    refused = [d for d in checked.diagnostics if d.code == "L-INTEGRITY"]
    assert not checked.accepted and len(refused) == 1 and "cannot be bound" in refused[0].message
    linked = link([pipeline], tmp_path / "out", **{policy: True})
    assert not linked.ok and not (tmp_path / "out" / "kernel.cubin").exists()
    assert check([pipeline]).accepted  # without the policy the check reads the contract and the PTX: a note at link
