"""The packages committed as clause fixtures are what `kernlink pack` makes from the sources beside them.

L-INTEGRITY, L-LINK and L-SYMBOL are decided from package files, so their fixtures commit small
`.kpkg` files. This test rebuilds each from the `.cu` and `.kc` beside it and compares
bytes; `fail_payload_hash/loader.kpkg` is the rebuilt package with one byte of its
`lto.ir` payload flipped. After a toolkit or package-format change, rewrite them with
``pytest --update-snapshots tests/link/test_fixture_packages.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from package.kpkg import pack_bytes, parse_package
from package.manifest import LTO_PAYLOAD
from packing.pack import build
from tests.snapshots import assert_bytes_snapshot

pytestmark = pytest.mark.toolchain

FIXTURES = Path(__file__).resolve().parents[1] / "checker" / "clauses"
# package -> offset into its lto.ir payload of the byte flipped after packing (None: intact)
PACKAGES: dict[str, int | None] = {
    "L-INTEGRITY/fail_payload_hash/loader.kpkg": 64,
    "L-INTEGRITY/pass_intact/loader.kpkg": None,
    "L-LINK/fail_fact_range/loader.kpkg": None,
    "L-SYMBOL/fail_multiply_defined/loader.kpkg": None,
    "L-SYMBOL/fail_multiply_defined/store.kpkg": None,
    "L-LINK/pass_linked/loader.kpkg": None,
}


def expected(package: Path, flip: int | None) -> bytes:
    built = build(package.with_suffix(".cu"), package.with_suffix(".kc"))
    data = bytearray(pack_bytes(built.manifest, built.payloads))
    if flip is not None:
        lto = built.payloads[LTO_PAYLOAD]
        start = bytes(data).index(lto)
        data[start + flip] ^= 0xFF
    return bytes(data)


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_fixture_package_is_reproducible(name: str) -> None:
    package = FIXTURES / name
    want = expected(package, PACKAGES[name])
    assert_bytes_snapshot(package, want)
    if PACKAGES[name] is None:
        parse_package(want, name=name)


def test_every_committed_package_is_listed() -> None:
    committed = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.kpkg"))
    assert committed == sorted(PACKAGES)
