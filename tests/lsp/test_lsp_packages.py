"""`kernlink lsp` once packages exist: spans told in the user's files, edited contracts checked, hover,
go to definition and quick fixes, driven through protocol messages as an editor would (issue 31 item 1)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from packing.pack import pack
from tests.lsp.test_lsp import EXAMPLES, Client, _open

pytestmark = pytest.mark.toolchain


def _ring(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "ring", root / "ring", ignore=shutil.ignore_patterns("build", "host"))
    return root / "ring"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _pack(folder: Path, *stems: str) -> None:
    for stem in stems:
        pack(folder / f"{stem}.cu", folder / f"{stem}.kc", folder / "build" / f"{stem}.kpkg")


def _line(path: Path, needle: str) -> int:
    """The 0-based line of ``path`` holding ``needle`` (LSP positions)."""
    return next(i for i, t in enumerate(path.read_text().split("\n")) if needle in t)


@pytest.fixture
def editor(tmp_path: Path) -> Iterator[Client]:
    c = Client(tmp_path)
    ident = c.send("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}, request=True)
    init = c.until(lambda m: m.get("id") == ident)
    caps = init["result"]["capabilities"]
    assert caps.get("hoverProvider") and caps.get("definitionProvider") and caps.get("codeActionProvider")
    c.send("initialized", {})
    yield c
    c.close()


def _published(c: Client, uris: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The diagnostics of the next publication for each of ``uris`` (in any order)."""
    got: dict[str, list[dict[str, Any]]] = {}
    while set(got) != uris:
        msg = c.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        if msg["params"]["uri"] in uris:
            got[msg["params"]["uri"]] = msg["params"]["diagnostics"]
    return got


def _request(c: Client, method: str, params: dict[str, Any]) -> Any:
    ident = c.send(method, params, request=True)
    answer = c.until(lambda m: m.get("id") == ident)
    assert "error" not in answer, answer
    return answer["result"]


def test_a_rejection_inside_packages_is_shown_in_the_users_contracts_and_cuda_source(
    editor: Client, tmp_path: Path
) -> None:
    folder = _ring(tmp_path)
    _edit(folder / "reduce.kc", "empty arrive per_warp(reduce)", "empty arrive 1")
    _pack(folder, "loader", "reduce")
    uris = {(folder / n).resolve().as_uri() for n in ("loader.kc", "reduce.kc", "reduce.cu")}
    _open(editor, folder / "ring.kp")
    got = _published(editor, uris)
    reduce, loader, cuda = (got[(folder / n).resolve().as_uri()] for n in ("reduce.kc", "loader.kc", "reduce.cu"))
    arrive = _line(folder / "reduce.kc", "empty arrive 1")
    assert {d["code"] for d in reduce} == {"L-ARRIVE", "L-CONFORM"}
    assert all(d["range"]["start"]["line"] == arrive for d in reduce), reduce
    assert [d["code"] for d in loader] == ["L-ARRIVE"]
    assert loader[0]["range"]["start"]["line"] == _line(folder / "loader.kc", "empty init per_warp(reduce)")
    (conform,) = cuda  # the PTX line told at the CUDA line its `.loc` names
    assert conform["code"] == "L-CONFORM"
    assert "mbarrier_arrive(empty" in (folder / "reduce.cu").read_text().split("\n")[conform["range"]["start"]["line"]]


def test_an_edited_contract_of_a_packed_stage_is_checked_as_edited_too(editor: Client, tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    _pack(folder, "loader", "reduce")
    _edit(folder / "reduce.kc", "empty arrive per_warp(reduce)", "empty arrive 1")
    uri = _open(editor, folder / "reduce.kc")
    diags = editor.diagnostics_for(uri)
    codes = {d["code"] for d in diags}
    assert "W-STALE-CONTRACT" in codes and "L-ARRIVE" in codes, codes
    arrive = next(d for d in diags if d["code"] == "L-ARRIVE")
    assert arrive["range"]["start"]["line"] == _line(folder / "reduce.kc", "empty arrive 1")
    assert "not yet packed" in arrive["message"]


def test_hover_explains_a_code_and_shows_the_handles_a_link_folded(editor: Client, tmp_path: Path) -> None:
    from kernlink.api import link

    folder = _ring(tmp_path)
    _pack(folder, "loader", "reduce")
    assert link([folder / "ring.kp"], folder / "out").ok
    loader = folder / "loader.kc"
    uri = _open(editor, loader)
    editor.diagnostics_for(uri)
    line = _line(loader, "ring kv produce")
    said = _request(
        editor,
        "textDocument/hover",
        {
            "textDocument": {"uri": uri},
            "position": {"line": line, "character": loader.read_text().split("\n")[line].index("kv")},
        },
    )
    value = said["contents"]["value"]
    assert "`kl_ring_loader_kv_depth` = 6" in value and "`out`" in value
    _edit(loader, "# one release per consumer warp", "# one release per consumer warp (see L-ARRIVE)")
    uri = _open(editor, loader)
    editor.diagnostics_for(uri)
    line = _line(loader, "see L-ARRIVE")
    col = loader.read_text().split("\n")[line].index("L-ARRIVE") + 2
    said = _request(
        editor, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}
    )
    assert "per phase" in said["contents"]["value"] and "L-ARRIVE" in said["contents"]["value"]


def test_hover_on_a_published_diagnostic_explains_its_code(editor: Client, tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    reduce = folder / "reduce.kc"
    _edit(reduce, "empty arrive per_warp(reduce)", "empty arrive 1")
    uri = _open(editor, reduce)
    assert any(d["code"] == "L-ARRIVE" for d in editor.diagnostics_for(uri))
    line = _line(reduce, "empty arrive 1")
    said = _request(
        editor, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": 10}}
    )
    assert said["contents"]["value"].startswith("L-ARRIVE (arrival-count)")


def test_definition_goes_to_a_rings_other_side_and_a_facts_owner(editor: Client, tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    reduce, loader = folder / "reduce.kc", folder / "loader.kc"
    uri = _open(editor, reduce)
    editor.diagnostics_for(uri)
    lines = reduce.read_text().split("\n")
    ring = _line(reduce, "ring kv consume")
    found = _request(
        editor,
        "textDocument/definition",
        {"textDocument": {"uri": uri}, "position": {"line": ring, "character": lines[ring].index("kv") + 1}},
    )
    assert [(f["uri"], f["range"]["start"]["line"]) for f in found] == [
        (loader.resolve().as_uri(), _line(loader, "ring kv produce"))
    ]
    fact = _line(reduce, "uses fact tile_elems")
    found = _request(
        editor,
        "textDocument/definition",
        {"textDocument": {"uri": uri}, "position": {"line": fact, "character": lines[fact].index("tile_elems") + 3}},
    )
    assert [(f["uri"], f["range"]["start"]["line"]) for f in found] == [
        (loader.resolve().as_uri(), _line(loader, "owns fact tile_elems"))
    ]


def _fixed(c: Client, uri: str, path: Path, code: str) -> str:
    """The text of ``path`` after the quick fix the server offers for its ``code`` diagnostic."""
    diag = next(d for d in c.diagnostics_for(uri) if d["code"] == code)
    actions = _request(
        c,
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}},
    )
    (action,) = actions
    assert action["kind"] == "quickfix"
    (edits,) = action["edit"]["changes"].values()
    text = path.read_text()
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def offset(p: dict[str, int]) -> int:
        return starts[p["line"]] + p["character"]

    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[: offset(e["range"]["start"])] + e["newText"] + text[offset(e["range"]["end"]) :]
    return text


def _fix_then_check(c: Client, path: Path, code: str) -> None:
    uri = _open(c, path)
    path.write_text(_fixed(c, uri, path, code))
    c.send("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d for d in c.diagnostics_for(uri) if d["severity"] == 1] == []


def test_a_quick_fix_adds_a_missing_proxy_fence(editor: Client, tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    reduce = folder / "reduce.kc"
    _edit(reduce, "        fence proxy_async  # the loads finish before the next bulk copy refills the slot\n", "")
    _fix_then_check(editor, reduce, "L-FENCE")
    assert "        fence proxy_async\n" in reduce.read_text()


def test_a_quick_fix_sets_the_parity_a_wait_needs(editor: Client, tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    loader = folder / "loader.kc"
    _edit(loader, "empty wait  #", "empty wait parity 0  #")
    _fix_then_check(editor, loader, "L-PARITY")
    assert "empty wait parity 1  #" in loader.read_text()


def test_a_quick_fix_adds_the_feature_the_code_needs(editor: Client, tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    reduce = folder / "reduce.kc"
    _edit(reduce, "requires feature mbarrier, setmaxnreg", "requires feature setmaxnreg")
    _pack(folder, "loader", "reduce")
    uri = _open(editor, reduce)
    fixed = _fixed(editor, uri, reduce, "L-CONFORM")
    assert "requires feature setmaxnreg, mbarrier" in fixed


def test_the_hover_skips_a_link_json_it_cannot_read_as_kernlinks(tmp_path: Path) -> None:
    """A `link.json` in the workspace is anyone's file: malformed, deeply nested or oddly shaped, it is
    skipped, and the readable one is found."""
    from kernlink.lsp_nav import newest_link

    for name, text in (
        ("list", '{"generated": [1, 2]}'),
        ("nested", "[" * 100_000 + "]" * 100_000),
        ("broken", '{"generated": {"handles": '),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "link.json").write_text(text)
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "link.json").write_text('{"generated": {"handles": [{"stage": "s", "symbol": "kl_x"}]}}')
    assert newest_link(tmp_path, "s") == ("good", [{"stage": "s", "symbol": "kl_x"}])
