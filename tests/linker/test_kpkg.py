"""The .kpkg format: round trip, byte determinism, and every defect as L-INTEGRITY."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

from checker.clauses import l_integrity
from diagnostics import DiagnosticError
from package.kpkg import (
    FORMAT_VERSION,
    MAGIC,
    Package,
    canonical_json,
    pack_bytes,
    parse_package,
    read_package,
    unpack,
    write_package,
)

MANIFEST = {
    "contract": "component loader {\n  warps 1\n}\n",
    "facts": {"registers": 40, "static_smem": 0, "kernels": ["k"]},
    "target": "sm_90a",
    "toolkit": {"nvrtc": "13.0", "nvjitlink": "13.0"},
}
PAYLOADS = {"component.ltoir": b"\xedCN\x7f" + bytes(range(256)) * 4, "component.cu": b"int x;\n"}
HEADER = struct.Struct("<8sIQ")


def _integrity(data: bytes) -> str:
    with pytest.raises(DiagnosticError) as excinfo, l_integrity.worded():
        parse_package(data, name="p.kpkg")
    (diag,) = excinfo.value.diagnostics
    assert diag.code == "L-INTEGRITY"
    return diag.message


def _forge(manifest: dict[str, object], tail: bytes) -> bytes:
    """A package whose manifest hash is right but whose content is whatever we say."""
    return _raw(canonical_json(manifest)) + tail


def _raw(body: bytes) -> bytes:
    return HEADER.pack(MAGIC, FORMAT_VERSION, len(body)) + body + hashlib.sha256(body).digest()


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "c.kpkg"
    write_package(path, MANIFEST, PAYLOADS)
    pkg = read_package(path)
    assert pkg.version == FORMAT_VERSION
    assert dict(pkg.payloads) == PAYLOADS
    entries = pkg.manifest["payloads"]
    assert [e["name"] for e in entries] == ["component.cu", "component.ltoir"]
    assert entries[1]["size"] == len(PAYLOADS["component.ltoir"])
    assert entries[1]["sha256"] == hashlib.sha256(PAYLOADS["component.ltoir"]).hexdigest()
    assert {k: v for k, v in pkg.manifest.items() if k != "payloads"} == MANIFEST
    assert [p.name for p in tmp_path.iterdir()] == ["c.kpkg"]


def test_bytes_are_deterministic() -> None:
    reordered = dict(reversed(list(MANIFEST.items())))
    first = pack_bytes(MANIFEST, PAYLOADS)
    assert pack_bytes(reordered, dict(reversed(list(PAYLOADS.items())))) == first
    assert pack_bytes(MANIFEST, PAYLOADS) == first
    assert first.startswith(MAGIC)


def test_empty_package() -> None:
    pkg = parse_package(pack_bytes({}, {}))
    assert dict(pkg.payloads) == {} and pkg.manifest["payloads"] == []


def test_tampered_payload() -> None:
    data = bytearray(pack_bytes(MANIFEST, PAYLOADS))
    data[-10] ^= 0xFF
    assert "payload `component.ltoir`" in _integrity(bytes(data))
    assert "SHA-256" in _integrity(bytes(data))


def test_tampered_manifest() -> None:
    data = bytearray(pack_bytes(MANIFEST, PAYLOADS))
    at = bytes(data).index(b"sm_90a")
    data[at + 5] = ord("b")
    assert "manifest" in _integrity(bytes(data)) and "SHA-256" in _integrity(bytes(data))


def test_every_truncation_is_reported() -> None:
    data = pack_bytes(MANIFEST, PAYLOADS)
    for cut in range(len(data)):
        message = _integrity(data[:cut])
        assert "truncated" in message or "bad magic" in message


def test_garbage_and_wrong_version() -> None:
    assert "bad magic" in _integrity(b"PK\x03\x04 a zip file, not a package")
    assert "bad magic" in _integrity(os.urandom(64))
    data = bytearray(pack_bytes(MANIFEST, PAYLOADS))
    data[8:12] = struct.pack("<I", 7)
    assert "format version 7" in _integrity(bytes(data))


def test_trailing_bytes() -> None:
    assert "unexpected bytes" in _integrity(pack_bytes(MANIFEST, PAYLOADS) + b"\0")


@pytest.mark.parametrize("name", ["../evil", "/etc/passwd", "a/b", "..", ".hidden", "a\\b", ""])
def test_forged_payload_names_are_rejected(name: str) -> None:
    blob = b"x"
    entry = {"name": name, "size": 1, "sha256": hashlib.sha256(blob).hexdigest()}
    assert "not a plain file name" in _integrity(_forge({"payloads": [entry]}, blob))


def test_forged_manifests() -> None:
    assert "no `payloads` list" in _integrity(_forge({"target": "sm_90a"}, b""))
    bad_entry = {"payloads": [{"name": "a", "size": -1, "sha256": "0" * 64}]}
    assert "malformed payload entry" in _integrity(_forge(bad_entry, b""))
    blob = b"x"
    entry = {"name": "a", "size": 1, "sha256": hashlib.sha256(blob).hexdigest()}
    assert "twice" in _integrity(_forge({"payloads": [entry, entry]}, blob + blob))
    assert "canonical form" in _integrity(_raw(json.dumps({"payloads": []}, indent=1).encode()))
    assert "not valid JSON" in _integrity(_raw(b'{"payloads":[],"payloads":[]}'))
    assert "not valid JSON" in _integrity(_raw(b'{"payloads":[],"x":NaN}'))
    assert "not valid JSON" in _integrity(_raw(b"\xff\xfe"))
    assert "not a JSON object" in _integrity(_raw(b"[1,2]"))


def test_unreadable_file(tmp_path: Path) -> None:
    """An OS error is E-IO naming the path (issue 20 item 4), not a package defect."""
    with pytest.raises(DiagnosticError) as excinfo:
        read_package(tmp_path / "missing.kpkg")
    assert excinfo.value.diagnostics[0].code == "E-IO"
    assert "missing.kpkg" in excinfo.value.diagnostics[0].message


def test_writer_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError, match="reserved"):
        pack_bytes({"payloads": []}, {})
    with pytest.raises(ValueError, match="plain file name"):
        pack_bytes({}, {"../x": b""})
    with pytest.raises(TypeError):
        pack_bytes({"when": object()}, {})
    with pytest.raises(ValueError, match="non-finite"):
        pack_bytes({"x": float("nan")}, {})


def test_unpack_writes_only_inside(tmp_path: Path) -> None:
    pkg = parse_package(pack_bytes(MANIFEST, PAYLOADS))
    dest = tmp_path / "out"
    written = unpack(pkg, dest)
    assert sorted(p.name for p in written) == sorted(PAYLOADS)
    assert all(p.parent == dest.resolve() for p in written)
    assert (dest / "component.cu").read_bytes() == PAYLOADS["component.cu"]


def test_unpack_replaces_a_symlink_instead_of_following_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "component.cu").symlink_to(outside)
    unpack(parse_package(pack_bytes(MANIFEST, PAYLOADS)), dest)
    assert outside.read_bytes() == b"keep"
    assert (dest / "component.cu").read_bytes() == PAYLOADS["component.cu"]


@pytest.mark.parametrize("name", ["../evil", "/abs/evil", "a/b", ".."])
def test_unpack_rejects_traversal(tmp_path: Path, name: str) -> None:
    pkg = Package(FORMAT_VERSION, {}, {name: b"x"}, "")
    with pytest.raises(DiagnosticError) as excinfo, l_integrity.worded():
        unpack(pkg, tmp_path / "out")
    assert excinfo.value.diagnostics[0].code == "L-INTEGRITY"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]
