"""bench/stale_handoff.py: one owner changes the fact `adds`; kernlink relinks, a symbol link keeps stale views.

CPU: both links build; kernlink's relink carries the new value into the consumer's params
field and the producer's folded handle, while the symbol link (nvJitLink alone over the
repacked producer, the consumer and the old glue) leaves the consumer's view at the old value.
GPU: the relink is correct; the symbol link of a smaller `adds` hangs and the watchdog decodes it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "stale_handoff.py"


def _study() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stale_handoff", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stale_handoff", module)
    spec.loader.exec_module(module)
    return module


STUDY = _study()


def _links(tmp_path: Path, old_adds: int, new_adds: int) -> tuple[Path, Path]:
    old = STUDY.kernlink_link(STUDY.build(tmp_path / "old", old_adds), tmp_path / "old-out")
    new_pipeline = STUDY.build(tmp_path / "new", new_adds)
    relinked = STUDY.kernlink_link(new_pipeline, tmp_path / "kernlink-out")
    symbol = STUDY.symbol_link(old, new_pipeline, old_adds, new_adds, tmp_path / "symbol-out")
    return relinked, symbol


def _adds_field(directory: Path) -> int:
    fields = json.loads((directory / "link.json").read_text())["params"]["fields"]
    return int(next(f["value"] for f in fields if f["name"] == "adds"))


@pytest.mark.toolchain
def test_a_relink_carries_the_new_fact_and_a_symbol_link_keeps_the_consumers_old_view(tmp_path: Path) -> None:
    relinked, symbol = _links(tmp_path, 2, 1)
    assert _adds_field(relinked) == 1 and _adds_field(symbol) == 2
    source = (relinked / "generated.cu").read_text()
    assert STUDY.PRODUCER_HANDLE.format(1) in source
    assert (symbol / "kernel.cubin").read_bytes() != (relinked / "kernel.cubin").read_bytes()


@pytest.mark.gpu
def test_on_the_gpu_the_relink_is_correct_and_the_stale_symbol_link_hangs_decoded(tmp_path: Path) -> None:
    relinked, symbol = _links(tmp_path, 2, 1)
    assert STUDY.run(relinked, 4, 8, 1)["outcome"] == "correct"
    outcome = STUDY.run(symbol, 4, 8, 1)
    assert outcome["outcome"] == "hang" and "waits for >= 16, last saw 8" in str(outcome["detail"]), outcome
