"""The link map (text and JSON) and the SVG: fixed format, deterministic bytes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

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
