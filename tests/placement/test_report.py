"""The link map (text and JSON) and the SVG: fixed format, deterministic bytes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placement import render_map, render_svg, solve, to_json
from tests.snapshots import assert_text_snapshot

from .helpers import gemm_swiglu

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    p = solve(gemm_swiglu())
    return {"gemm_swiglu.map": render_map(p), "gemm_swiglu.json": to_json(p), "gemm_swiglu.svg": render_svg(p)}


@pytest.mark.parametrize("name", ["gemm_swiglu.map", "gemm_swiglu.json", "gemm_swiglu.svg"])
def test_snapshot(rendered: dict[str, str], name: str) -> None:
    assert_text_snapshot(SNAPSHOTS / name, rendered[name])


def test_map_has_fixed_header_and_every_claim(rendered: dict[str, str]) -> None:
    text = rendered["gemm_swiglu.map"]
    assert text.startswith("# kernlink placement map")
    header = next(line for line in text.splitlines() if line.lstrip().startswith("Offset"))
    assert header.split() == ["Offset", "Size", "Align", "Lifetime", "Symbol", "Why"]
    for needle in ("<reserved>", "operands", "kv.mbarriers", "scratch", "sync", "producer", "group 3", "2..4"):
        assert needle in text


def test_json_is_sorted_and_complete(rendered: dict[str, str]) -> None:
    data = json.loads(rendered["gemm_swiglu.json"])
    assert rendered["gemm_swiglu.json"] == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert data["format"] == "kernlink-placement/1"
    assert data["optimal"] is True and data["canonical"] is True
    assert [c["name"] for c in data["domains"]["smem"]["claims"]] == ["operands", "scratch", "kv.mbarriers"]
    assert data["warps"]["register_pool"] == 65536


def test_svg_is_well_formed(rendered: dict[str, str]) -> None:
    root = ET.fromstring(rendered["gemm_swiglu.svg"])
    assert root.tag.endswith("svg")
    titles = [el.text for el in root.iter() if el.tag.endswith("title")]
    assert any(t and t.startswith("gemm.mainloop.operands") for t in titles)
    assert any(t and t.startswith("group 3") for t in titles)


def test_svg_has_an_owner_legend_mbarriers_and_round_ticks(rendered: dict[str, str]) -> None:
    root = ET.fromstring(rendered["gemm_swiglu.svg"])
    texts = [el.text or "" for el in root.iter() if el.tag.endswith("text")]
    titles = [el.text or "" for el in root.iter() if el.tag.endswith("title")]
    assert {"gemm.mainloop", "swiglu.epilogue"} <= set(titles) and {"gemm.mainloop", "swiglu.epilogue"} <= set(texts)
    assert any(t.startswith("mbarriers of `gemm.mainloop.kv`: [") for t in texts)
    marks = [el for el in root.iter() if el.tag.endswith("rect") and "mbarriers" in "".join(el.itertext())]
    assert marks and all(float(el.get("width", "0")) >= 4.0 for el in marks)
    axis = [t for t in texts if t == "0" or t.endswith(" KiB")]
    assert axis[:3] == ["0", "32 KiB", "64 KiB"], axis


@given(st.integers(min_value=1, max_value=1 << 24))
def test_ticks_are_round_and_few(top: int) -> None:
    from placement.svg import ticks

    found = ticks(top)
    step = found[1] - found[0] if len(found) > 1 else top
    assert found[0] == 0 and found[-1] <= top and len(found) <= 9
    assert all(t % step == 0 for t in found)
    decimal = step < 1024 and str(step).rstrip("0") in ("1", "2", "5")
    assert decimal or (step % 1024 == 0 and (step // 1024).bit_count() == 1), step


def test_svg_draws_the_route_barriers_the_link_places() -> None:
    from analysis.plan import place_route_barriers
    from kernlink.api import check

    result = check([Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "gemm_swiglu.kp"])
    assert result.composition is not None and result.downstream is not None and result.placed is not None
    placed = place_route_barriers(result.composition, result.placed, result.downstream.routes)
    root = ET.fromstring(render_svg(placed.placement))
    routes = [el for el in root.iter() if el.tag.endswith("rect") and el.get("fill") == "url(#route)"]
    assert ["".join(el.itertext()) for el in routes] == [
        "swiglu.epilogue.transfer.acc.0: ID 1 (a route's barrier, 384 threads)"
    ]
