"""A named barrier that ``orders`` a counter claim stands between the role's global writes and the counter's release,
and between its acquire and the role's global reads (issue 27, check ``barrier-orders``).

The persistent GEMM's consumer (role `mma`) runs the stream-K fix-up in the `gemm.streamk_fixup` callables: a
PARTIAL unit stores its partial to the global workspace (`gs_consumer_fixup_store`, every thread), syncs on
`sk_sync`, and thread 0 raises its counter (`gs_consumer_fixup_raise`, `st.release.gpu`); the FINISH unit's thread
0 awaits the counters (`gs_consumer_fixup_await`, an acquire spin), syncs on `sk_sync`, and every thread adds the
partials (`gs_consumer_fixup_add`). `claim barrier sk_sync participants mma orders sk_flags` states it. Each failing
variant below is one compiled edit of the example (one `named_sync` removed) and gives exactly one L-CONFORM
`barrier-orders` finding at the consumer's call, the callable's own line in a note; the unedited example (checked in
tests/conformance/test_callable_summary.py, ``test_the_example_is_the_passing_twin``) is the passing twin.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnostics.model import Diagnostic
from kernlink.api import check
from packing.pack import pack

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
PARTS = ("scheduler", "producer", "consumer", "fixup", "epilogue")
SK_SYNC = "            gs::named_sync(kl_gemm_mainloop_sk_sync_bar_id(), kl_gemm_mainloop_sk_sync_threads());\n"
STORE = "            gs_consumer_fixup_store(acc[0], p->workspace, &site);\n"
AWAIT = "            gs_consumer_fixup_await(flags, &site);\n"


def _checked(tmp_path: Path, edits: dict[str, list[tuple[str, str]]]) -> list[Diagnostic]:
    root = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", root, ignore=shutil.ignore_patterns("build"))
    for name, pairs in edits.items():
        path = root / "persistent" / name
        text = path.read_text()
        for old, new in pairs:
            assert text.count(old) == 1, f"{old!r} is not in {name} exactly once"
            text = text.replace(old, new)
        path.write_text(text)
    folder = root / "persistent"
    for part in PARTS:
        pack(folder / f"{part}.cu", folder / f"{part}.kc", folder / "build" / f"{part}.kpkg")
    result = check([folder / "gemm_swiglu_persistent.kp"], strict=True)
    return [d for d in result.diagnostics if d.code in ("L-CONFORM", "I-CONFORM")]


CASES = {
    # every thread's partial store not ordered before thread 0's release of the counter
    "no-sync-before-raise": (STORE + SK_SYNC, STORE, "releases counter `sk_flags`", ("gs_sk_raise", "gs_sk_store")),
    # every thread's read of the partials not ordered after thread 0's acquire of the counter
    "no-sync-after-await": (
        AWAIT + SK_SYNC,
        AWAIT,
        "after the acquire `ld.acquire.gpu.global.u32` of counter `sk_flags`",
        ("gs_sk_add", "gs_sk_await"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_missing_sync_around_the_counter_is_one_finding(case: str, tmp_path: Path) -> None:
    old, new, words, (callee, first) = CASES[case]
    found = _checked(tmp_path, {"consumer.cu": [(old, new)]})
    assert len(found) == 1, [d.message for d in found]
    d = found[0]
    data = dict(d.data)
    assert d.code == "L-CONFORM" and data["check"] == "barrier-orders", (d.code, data, d.message)
    assert data["function"] == "gs_consumer_main"
    assert words in d.message and "no `bar.sync` on barrier `sk_sync`" in d.message, d.message
    # at the call of one callable (its own line in a note), naming the other access and its callable's line
    assert any(f"run by the callable `{callee}`" in n for n in d.notes), d.notes
    assert f"in the callable `{first}` at its line" in d.message, d.message
    assert {lab.span.file.rsplit("/", 1)[-1] for lab in d.labels} >= {"consumer.kc"}


def test_without_orders_the_missing_sync_is_not_this_check(tmp_path: Path) -> None:
    # the contract that does not state `orders sk_flags` leaves the race outside (what the campaign measured)
    edits = {
        "consumer.cu": [(STORE + SK_SYNC, STORE)],
        "consumer.kc": [("participants mma orders sk_flags", "participants mma")],
    }
    assert [d for d in _checked(tmp_path, edits) if dict(d.data)["check"] == "barrier-orders"] == []
