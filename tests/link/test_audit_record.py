"""`kernlink audit` on a link directory it did not write (issue 32 items 1, 6 and 10).

A `link.json` that is not a record kernlink wrote — bytes flipped, values of another type, keys
missing, numbers past any range, nesting past any depth — is a clean rejection: never E-INTERNAL,
never a traceback, never a path of the machine it runs on. And the audit covers what the code
does with what the map placed (bulk-copy sizes, the claims shared memory lies in), the params
layout the kernel reads, the fact values, and the C launcher (`kernel.h`) the link wrote.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernlink.api import LinkResult
from kernlink.cli import main
from tests.tiers import examples

pytestmark = pytest.mark.toolchain

Linked = dict[str, tuple[LinkResult, Path]]


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _audit(folder: Path, *extra: str) -> tuple[int, str]:
    """``kernlink audit out`` run from ``folder`` (a relative DIR), its exit code and its output."""
    out = io.StringIO()
    with _inside(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["audit", "out", "--color", "never", *extra])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def ring(linked: Linked, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding `out/`, a copy of the ring example's link directory, and `out/link.json`'s bytes."""
    folder = tmp_path_factory.mktemp("audit")
    shutil.copytree(linked["ring"][1], folder / "out")
    return folder


def _fresh(ring: Path, tmp_path: Path) -> Path:
    shutil.copytree(ring / "out", tmp_path / "out")
    return tmp_path


def _edit(folder: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = folder / "out" / "link.json"
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))


def _field(record: dict[str, Any], name: str, stage: str) -> dict[str, Any]:
    return next(f for f in record["params"]["fields"] if f["name"] == name and f["stage"] == stage)


def test_the_ring_link_passes_every_part_of_the_audit(ring: Path) -> None:
    code, text = _audit(ring)
    assert code == 0, text
    for part in ("bulk-copy sizes", "the params layout the kernel reads", "kernel.h writes"):
        assert part in text


# ----------------------------------------------------------------- the params and the launchers


def _swap(record: dict[str, Any], a: str, b: str, stage: str) -> None:
    first, second = _field(record, a, stage), _field(record, b, stage)
    first["offset"], second["offset"] = second["offset"], first["offset"]


def test_swapped_params_offsets_fail_in_the_code_and_in_kernel_h(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)
    _edit(folder, lambda r: _swap(r, "src", "tiles", "ring.loader"))
    code, text = _audit(folder)
    assert code == 1
    assert "the linked kernel reads 8 B of its params at +0; the map has no field that starts and ends there" in text
    assert "`kernel.h` line" in text
    (folder / "out" / "kernel.h").unlink()  # the code alone still tells
    code, text = _audit(folder)
    assert code == 1 and "reads 8 B of its params at +0" in text


def test_swapped_fields_of_one_size_fail_against_kernel_h(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)
    _edit(folder, lambda r: _swap(r, "tile_elems", "tiles", "ring.reduce"))
    code, text = _audit(folder)
    assert code == 1 and "`kernel.h` line" in text and "ring_reduce_tiles;  /* @ 24: caller */" in text


def test_a_fact_value_the_launcher_would_write_differently_fails(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)

    def halve(record: dict[str, Any]) -> None:
        _field(record, "tile_elems", "ring.reduce")["value"] = 4096

    _edit(folder, halve)
    code, text = _audit(folder)
    assert code == 1 and "fact tile_elems = 8192" in text and "fact tile_elems = 4096" in text
    (folder / "out" / "kernel.h").unlink()  # nothing else records the value: said, never passed
    code, text = _audit(folder)
    assert code == 0 and "note[I-AUDIT]" in text and "holds no `kernel.h`" in text
    code, text = _audit(folder, "--strict")
    assert code == 1 and "error[L-LINK]" in text


def test_one_fact_with_two_values_in_the_map_fails(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)
    (folder / "out" / "kernel.h").unlink()

    def second(record: dict[str, Any]) -> None:
        handle = {"kind": "fact", "item": "tile_elems", "stage": "ring.loader", "symbol": "x", "value": 4096}
        record["generated"]["handles"].append({**handle, "why": ""})

    _edit(folder, second)
    code, text = _audit(folder, "--strict")
    assert code == 1 and "the map gives fact `tile_elems` the value 8192" in text and "4096" in text


def test_a_params_block_of_another_size_than_the_kernels_fails(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)
    (folder / "out" / "kernel.h").unlink()
    _edit(folder, lambda r: r["params"].update(size=48))
    code, text = _audit(folder)
    assert code == 1 and "the cubin's kernel takes 32 B of params; the map's params block is 48 B" in text


def test_a_field_past_its_block_fails(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)
    _edit(folder, lambda r: _field(r, "tiles", "ring.reduce").update(offset=30))
    code, text = _audit(folder)
    assert code == 1 and "`tiles` of `ring.reduce` ends at +34, past the params block (32 B)" in text


# ----------------------------------------------------------------- shared memory


def test_slots_smaller_than_the_codes_copies_fail(ring: Path, tmp_path: Path) -> None:
    """The issue's attack as the map shows it: 1 KiB slots, 32 KiB copies."""
    folder = _fresh(ring, tmp_path)

    def shrink(record: dict[str, Any]) -> None:
        for claim in record["placement"]["domains"]["smem"]["claims"]:
            if claim["kind"] == "slots":
                claim["demand"] = 1024

    _edit(folder, shrink)
    code, text = _audit(folder)
    assert code == 1
    assert "copies 32768 B into shared memory in one bulk copy; the largest piece the map places is 1024 B" in text


def test_shared_memory_no_claim_holds_fails(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)

    def drop(record: dict[str, Any]) -> None:
        claims = record["placement"]["domains"]["smem"]["claims"]
        claims[:] = [c for c in claims if c["kind"] != "mbarriers"]

    _edit(folder, drop)
    code, text = _audit(folder)
    assert code == 1 and "which no claim of the map holds" in text


# ----------------------------------------------------------------- records that are not records


def _json_values() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8,
    )


#: The parts of a record the audit reads (an edit elsewhere, to the diagnostics or the attempts, is not read).
AUDITED = ("status", "cubin", "dispatch", "generated", "params", "placement")


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if (at and at[0] not in AUDITED) or at[:2] == ("placement", "rings"):
        return
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            yield from _paths(item, (*at, i))


def _apply(record: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value
    parent = record
    for step in path[:-1]:
        parent = parent[step]
    if action == "drop":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value if action == "set" else [parent[path[-1]]]
    return record


def _clean(code: int, text: str, folder: Path) -> None:
    assert code in (0, 1, 2), text[-2000:]
    assert "E-INTERNAL" not in text and "Traceback" not in text, text[-2000:]
    assert str(folder) not in text and str(folder.resolve()) not in text, text[-2000:]


@given(data=st.data())
@examples(0.1)
def test_json_structure_edits_are_clean_rejections(ring: Path, data: st.DataObject) -> None:
    original = (ring / "out" / "link.json").read_text()
    record = json.loads(original)
    paths = list(_paths(record))
    path = data.draw(st.sampled_from(paths))
    action = data.draw(st.sampled_from(("set", "drop", "wrap")) if path else st.just("set"))
    value = data.draw(_json_values())
    edited = _apply(record, path, action, value)
    try:
        (ring / "out" / "link.json").write_text(json.dumps(edited))
        _clean(*_audit(ring), ring)
    finally:
        (ring / "out" / "link.json").write_text(original)


@given(
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.sampled_from(("flip", "drop", "insert")), st.binary(min_size=1, max_size=6)),
        min_size=1,
        max_size=4,
    )
)
@examples(0.3)
def test_byte_edits_are_clean_rejections(ring: Path, edits: list[tuple[float, str, bytes]]) -> None:
    path = ring / "out" / "link.json"
    original = path.read_bytes()
    data = bytearray(original)
    for where, how, blob in edits:
        at = min(int(where * len(data)), max(len(data) - 1, 0))
        if how == "flip" and data:
            data[at] ^= blob[0] or 1
        elif how == "drop":
            del data[at : at + len(blob)]
        else:
            data[at:at] = blob
    try:
        path.write_bytes(bytes(data))
        _clean(*_audit(ring), ring)
    finally:
        path.write_bytes(original)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"status": "linked", "dispatch": ' * 5000 + "{}" + "}" * 5000,
        '{"status": "linked"}',
        "1e999",
        '{"status": "linked", "n": ' + "9" * 5000 + "}",
        "",
    ],
    ids=["deep-list", "deep-object", "fields-missing", "infinity", "huge-int", "empty"],
)
def test_records_past_every_bound_are_rejected_by_name(ring: Path, tmp_path: Path, text: str) -> None:
    folder = _fresh(ring, tmp_path)
    (folder / "out" / "link.json").write_text(text)
    code, out = _audit(folder)
    _clean(code, out, folder)
    assert code == 1 and "error[L-LINK]: `out/link.json` is not a link record kernlink wrote" in out


def test_a_huge_ring_depth_is_bounded(ring: Path, tmp_path: Path) -> None:
    folder = _fresh(ring, tmp_path)

    def deep(record: dict[str, Any]) -> None:
        for h in record["generated"]["handles"]:
            if h["kind"] == "ring_depth":
                h["value"] = 2**62

    _edit(folder, deep)
    code, text = _audit(folder)
    _clean(code, text, folder)
    assert code == 1
