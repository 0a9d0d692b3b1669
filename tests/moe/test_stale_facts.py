"""The stale-upgrade study's catalogue (bench/stale_facts.py): kernlink's verdicts on moe4's contracts.

Each of the seven incompatible combinations is rejected by its named clause, first, before
anything runs; each upgrade checks and places (a link carries the new value to every consumer),
and where a consumer compiled the fact in instead (its `uses` line an `assumes` of the old
value), the same upgrade is rejected with L-FACT naming both sides. The unchanged example is the
passing twin of every rejection, each upgrade the twin of its assumed variant.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kernlink.api import check

BENCH = Path(__file__).resolve().parents[2] / "bench" / "stale_facts.py"


def _study() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stale_facts", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stale_facts", module)
    spec.loader.exec_module(module)
    return module


STUDY = _study()


def test_the_unchanged_example_checks_and_places() -> None:
    result = check([STUDY.EXAMPLE / "moe4.kp"])
    assert result.accepted and result.downstream is not None and result.downstream.placed is not None


def test_the_catalogue_has_five_upgrades_and_seven_distinct_rejections() -> None:
    assert len(STUDY.UPGRADES) == 5 and len(STUDY.INCOMPATIBLE) == 7
    assert all(e.expect is not None for e in STUDY.INCOMPATIBLE)


@pytest.mark.parametrize("edit", STUDY.INCOMPATIBLE, ids=lambda e: f"{e.expect}-{e.name}")
def test_an_incompatible_combination_is_rejected_by_its_clause(tmp_path: Path, edit: Any) -> None:
    v = STUDY.verdict(edit, tmp_path)
    assert not v.accepted and v.codes[0] == edit.expect, (v.codes, v.first)


@pytest.mark.parametrize("edit", STUDY.UPGRADES, ids=lambda e: e.name)
def test_an_upgrade_checks_and_places(tmp_path: Path, edit: Any) -> None:
    v = STUDY.verdict(edit, tmp_path)
    assert v.accepted and edit.expect is None, (v.codes, v.first)


@pytest.mark.parametrize("edit", [e for e in STUDY.UPGRADES if e.assumed is not None], ids=lambda e: e.name)
def test_the_upgrade_is_l_fact_where_a_consumer_assumes_the_old_value(tmp_path: Path, edit: Any) -> None:
    v = STUDY.verdict(edit, tmp_path, assumed=True)
    assert not v.accepted and v.codes == ("L-FACT",), (v.codes, v.first)
    consumer = {"act.kc": "moe.act", "gemm.kc": "moe.gemm"}[edit.assumed[0]]
    assert f"`{consumer}` is compiled assuming" in v.first and f"but `{edit.owner}` owns" in v.first, v.first


def test_four_of_the_five_upgrades_have_an_assumed_variant() -> None:
    assert sum(e.assumed is not None for e in STUDY.UPGRADES) == 4  # a ring depth is a handle, never assumed


@pytest.fixture(scope="module")
def old_link(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """moe4 packed and linked as it was (with the watchdog, as the study links it): its sources and its link."""
    import shutil

    root = tmp_path_factory.mktemp("stale")
    shutil.copytree(STUDY.EXAMPLE, root / "src", ignore=shutil.ignore_patterns("build"))
    return root / "src", STUDY.kernlink_link(STUDY.pack_all(root / "src"), root / "old")


@pytest.mark.toolchain
@pytest.mark.parametrize("edit", STUDY.UPGRADES, ids=lambda e: e.name)
def test_an_upgrade_relinks_with_the_new_value_and_a_symbol_link_keeps_the_consumers_old_view(
    tmp_path: Path, old_link: tuple[Path, Path], edit: Any
) -> None:
    import json
    import shutil

    src, old = old_link
    shutil.copytree(src, tmp_path / "src")
    STUDY.apply(edit, tmp_path / "src")
    pipeline = STUDY.pack_all(tmp_path / "src", only=edit.owner)  # only the owner is repacked
    relinked = STUDY.kernlink_link(pipeline, tmp_path / "kernlink")
    symbol = STUDY.symbol_link(old, pipeline, edit, tmp_path / "symbol")
    for symbol_name, _before, after in edit.handles:
        assert f"{symbol_name}() {{ return {after}u; }}" in (relinked / "generated.cu").read_text()
        assert f"{symbol_name}() {{ return {after}u; }}" in (symbol / "generated.cu").read_text()
    fact = edit.new.split("fact ")[1].split(":")[0] if "fact " in edit.new else None

    def consumers(directory: Path) -> set[int]:
        fields = json.loads((directory / "link.json").read_text())["params"]["fields"]
        return {int(f["value"]) for f in fields if f["source"] == "fact" and f["fact"] == fact}

    if fact is not None and edit.assumed is not None:  # a fact some consumer takes as a param
        ((_, before, after),) = edit.handles
        assert consumers(relinked) == {after} and consumers(symbol) == {before}
    if edit.name.startswith("ring"):  # the consumer's own depth handle: new in the relink, old in the symbol link
        assert "kl_moe_act_h_depth() { return 2u; }" in (relinked / "generated.cu").read_text()
        assert "kl_moe_act_h_depth() { return 4u; }" in (symbol / "generated.cu").read_text()
    assert (symbol / "kernel.cubin").read_bytes() != (relinked / "kernel.cubin").read_bytes()
