"""The ``.kpkg`` package: one file holding a manifest and the payloads of a component.

Layout (little-endian; documented in ``specs/package-format.md``)::

    magic  8 bytes   b"\\x89KPKG\\r\\n\\x1a"
    u32              format version (1)
    u64              manifest length M
    M bytes          manifest: canonical JSON (sorted keys, no blanks, UTF-8)
    32 bytes         SHA-256 of the manifest bytes
    payloads         concatenated in the order of the manifest's ``payloads`` list

The caller's manifest gets a ``payloads`` list of ``{name, size, sha256}``, sorted
by name. The same inputs always give the same bytes. Any defect found on reading
raises :class:`package.integrity.PackageDefect` (an ``L-INTEGRITY`` finding; a file over the
size limit or one that cannot be read is a ``DiagnosticError``).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO

from diagnostics import Diagnostic, DiagnosticError
from diagnostics.files import atomic_write_bytes, open_regular, read_capped
from diagnostics.symbols import Code
from package.integrity import defect

MAGIC = b"\x89KPKG\r\n\x1a"
FORMAT_VERSION = 1
PAYLOADS_KEY = "payloads"

# Reading limits (specs/package-format.md): a package is a regular file of at most
# 256 MiB, its manifest at most 16 MiB; payloads are read and hashed 1 MiB at a time.
MAX_PACKAGE_BYTES = 256 << 20
MAX_MANIFEST_BYTES = 16 << 20
_CHUNK = 1 << 20
# Manifest values nest at most this deep; integers stay within ±2**64.
MAX_DEPTH = 32
_INT_LIMIT = 2**64

_HEADER = struct.Struct("<8sIQ")
_HASH_BYTES = 32
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}")


@dataclass(frozen=True)
class Package:
    """A package as read back: its manifest (with ``payloads`` entries) and payload bytes."""

    version: int
    manifest: Mapping[str, Any]
    payloads: Mapping[str, bytes]
    manifest_sha256: str
    size: int = 0  # the whole file: its size and SHA-256, hashed as it was read
    sha256: str = ""


def valid_payload_name(name: str) -> bool:
    """A plain file name: letters, digits, ``._-``, not starting with a dot, ≤ 255 chars."""
    return _NAME.fullmatch(name) is not None


def canonical_json(value: object) -> bytes:
    """The canonical encoding of a manifest: sorted keys, no blanks, UTF-8."""
    _check_json(value, "manifest")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def pack_bytes(manifest: Mapping[str, Any], payloads: Mapping[str, bytes]) -> bytes:
    """The bytes of a package; deterministic for equal inputs."""
    if PAYLOADS_KEY in manifest:
        raise ValueError(f"manifest key `{PAYLOADS_KEY}` is reserved for the package")
    for name in payloads:
        if not valid_payload_name(name):
            raise ValueError(f"payload name `{name}` is not a plain file name")
    names = sorted(payloads)
    entries = [{"name": n, "size": len(payloads[n]), "sha256": hashlib.sha256(payloads[n]).hexdigest()} for n in names]
    body = canonical_json({**manifest, PAYLOADS_KEY: entries})
    parts = [
        _HEADER.pack(MAGIC, FORMAT_VERSION, len(body)),
        body,
        hashlib.sha256(body).digest(),
        *(bytes(payloads[n]) for n in names),
    ]
    return b"".join(parts)


def write_package(path: str | os.PathLike[str], manifest: Mapping[str, Any], payloads: Mapping[str, bytes]) -> None:
    """Write a package atomically (a reader sees the old file or the new, never a mix)."""
    atomic_write_bytes(Path(path), pack_bytes(manifest, payloads))


def read_package(path: str | os.PathLike[str]) -> Package:
    """Read and verify a package file: a regular file of at most :data:`MAX_PACKAGE_BYTES`,
    read piece by piece (no byte past what the header and manifest announce)."""
    name = os.fspath(path)
    with open_regular(path, display=name) as handle:
        size = os.fstat(handle.fileno()).st_size
        return _read(handle, size, name)


def parse_package(data: bytes, *, name: str = "<package>") -> Package:
    """Verify and decode package bytes: magic, version, manifest hash and JSON, payloads."""
    return _read(io.BytesIO(data), len(data), name)


class _Hashing:
    """A file read piece by piece, hashing every byte that is read."""

    def __init__(self, handle: BinaryIO, name: str) -> None:
        self.handle, self.name = handle, name
        self.sha = hashlib.sha256()

    def read(self, count: int) -> bytes:
        data = read_capped(self.handle, count, self.name)
        self.sha.update(data)
        return data


def _read(file: BinaryIO, size: int, name: str) -> Package:
    handle = _Hashing(file, name)
    if size > MAX_PACKAGE_BYTES:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_TOO_LARGE,
                    f"package `{name}` is too large: {size} bytes, over the limit of {MAX_PACKAGE_BYTES} bytes",
                    notes=("kernlink reads packages of at most 256 MiB",),
                )
            ]
        )
    head = handle.read(_HEADER.size)
    if len(head) < len(MAGIC) or head[: len(MAGIC)] != MAGIC:
        raise defect(name, "bad-magic")
    if len(head) < _HEADER.size:
        raise defect(name, "short-header", need=_HEADER.size, size=size)
    _, version, length = _HEADER.unpack_from(head)
    if version != FORMAT_VERSION:
        raise defect(name, "format-version", version=version, supported=FORMAT_VERSION)
    end = _HEADER.size + length
    if end + _HASH_BYTES > size:
        raise defect(name, "short-manifest", need=end + _HASH_BYTES, size=size)
    if length > MAX_MANIFEST_BYTES:
        raise defect(name, "manifest-too-large", length=length, limit=MAX_MANIFEST_BYTES)
    body = handle.read(length)
    digest = handle.read(_HASH_BYTES)
    if len(body) != length or len(digest) != _HASH_BYTES:
        raise defect(name, "manifest-cut")
    if hashlib.sha256(body).digest() != digest:
        raise defect(name, "manifest-hash")
    manifest = _decode_manifest(body, name)
    entries = _payload_entries(manifest, name)
    offset = end + _HASH_BYTES
    need = offset + sum(e["size"] for e in entries)
    if need != size:
        if need > size:
            missing = next(e for e in entries if (offset := offset + e["size"]) > size)
            raise defect(
                name,
                "payload-cut",
                payload=missing["name"],
                need=missing["size"],
                offset=offset - missing["size"],
                size=size,
            )
        raise defect(name, "trailing-bytes", count=size - need)
    payloads: dict[str, bytes] = {}
    for entry in entries:
        pname, psize = entry["name"], entry["size"]
        sha = hashlib.sha256()
        chunks: list[bytes] = []
        left = psize
        while left:
            chunk = handle.read(min(left, _CHUNK))
            if not chunk:
                raise defect(name, "payload-ended", payload=pname)
            sha.update(chunk)
            chunks.append(chunk)
            left -= len(chunk)
        if sha.hexdigest() != entry["sha256"]:
            raise defect(name, "payload-hash", payload=pname)
        payloads[pname] = b"".join(chunks)
    if read_capped(file, 1, name):
        raise defect(name, "grew")
    return Package(
        version,
        MappingProxyType(manifest),
        MappingProxyType(payloads),
        hashlib.sha256(body).hexdigest(),
        size,
        handle.sha.hexdigest(),
    )


def unpack(package: Package, dest_dir: str | os.PathLike[str]) -> tuple[Path, ...]:
    """Write every payload as ``dest_dir/<name>``; never writes outside ``dest_dir``."""
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    written = []
    for pname, blob in sorted(package.payloads.items()):
        target = root / pname
        if not valid_payload_name(pname) or target.parent != root:
            raise defect("", "unsafe-name", payload=pname)
        atomic_write_bytes(target, blob)
        written.append(target)
    return tuple(written)


def _decode_manifest(body: bytes, name: str) -> dict[str, Any]:
    try:
        manifest = json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_int=_json_int,
            parse_float=_json_float,
        )
    except RecursionError as err:
        raise defect(name, "manifest-deep", depth=MAX_DEPTH) from err
    except (UnicodeDecodeError, ValueError) as err:
        raise defect(name, "manifest-json", error=err) from err
    if not isinstance(manifest, dict):
        raise defect(name, "manifest-not-object")
    problem = check_limits(manifest)
    if problem is not None:
        raise defect(name, "manifest-limits", problem=problem)
    if canonical_json(manifest) != body:
        raise defect(name, "manifest-not-canonical")
    return manifest


def _payload_entries(manifest: dict[str, Any], name: str) -> list[dict[str, Any]]:
    entries = manifest.get(PAYLOADS_KEY)
    if not isinstance(entries, list):
        raise defect(name, "no-payload-list", key=PAYLOADS_KEY)
    seen: set[str] = set()
    for entry in entries:
        ok = (
            isinstance(entry, dict)
            and set(entry) == {"name", "size", "sha256"}
            and isinstance(entry["name"], str)
            and isinstance(entry["sha256"], str)
            and type(entry["size"]) is int
            and entry["size"] >= 0
            and re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]) is not None
        )
        if not ok:
            raise defect(name, "payload-entry", entry=json.dumps(entry, sort_keys=True)[:200])
        pname = entry["name"]
        if not valid_payload_name(pname):
            raise defect(name, "payload-name", payload=pname)
        if pname in seen:
            raise defect(name, "payload-twice", payload=pname)
        seen.add(pname)
    if [e["name"] for e in entries] != sorted(seen):
        raise defect(name, "payloads-unsorted")
    return entries


def check_limits(value: object) -> str | None:
    """The generic limits every manifest value keeps, whatever its schema: nesting at most
    :data:`MAX_DEPTH` deep, integers within ±2**64, finite numbers, strings that are valid
    Unicode (no lone surrogate). Walked without recursion; returns the first breach."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"is nested more than {MAX_DEPTH} levels deep"
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "holds a string that is not valid Unicode (a lone surrogate)"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) > _INT_LIMIT:
                return "holds an integer beyond ±2**64"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "holds a non-finite number"
        elif isinstance(item, list):
            stack.extend((sub, depth + 1) for sub in item)
        elif isinstance(item, dict):
            stack.extend((key, depth + 1) for key in item)
            stack.extend((sub, depth + 1) for sub in item.values())
    return None


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > 20:
        raise ValueError(f"integer of {len(text)} digits is beyond ±2**64")
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is not finite")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not allowed")


def _check_json(value: object, where: str) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} holds a non-finite number")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a non-string key {key!r}")
            _check_json(item, f"{where}.{key}")
        return
    raise TypeError(f"{where} holds a {type(value).__name__}, which JSON cannot encode")
