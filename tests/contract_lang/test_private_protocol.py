"""A stage-private protocol stated in the contract: a claim's mbarrier `signal` and what a named barrier `orders`:
parsed, printed back, and refused where it cannot mean anything."""

from __future__ import annotations

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError

STAGE = """stage "fx.private" version "1.0.0" {{
    target sm_100a
    requires feature mbarrier, tcgen05, tmem
    role mma entry fx_mma_main warps 4 warpgroup
    claim smem staged bytes 4KiB align 128
    {line}
}}
"""


def _claim(line: str) -> A.Node:
    source = parse_text(STAGE.format(line=line), "private.kc")
    (stage,) = source.items
    assert isinstance(stage, A.Stage)
    text = print_file(source)
    assert line in text
    assert parse_text(text, "again.kc") == source
    return stage.items[-1]


def test_a_signal_parses_and_prints_back() -> None:
    claim = _claim("claim smem done bytes 8 align 8 use mbarrier signal by mma init 1 arrive commit wait parity 0")
    assert isinstance(claim, A.SmemClaim) and claim.signal == A.Signal("mma", 1, "commit", 0)


def test_orders_parses_and_prints_back() -> None:
    claim = _claim("claim barrier staging_sync participants mma orders staged")
    assert isinstance(claim, A.BarrierClaim) and claim.orders == ("staged",)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("claim smem done bytes 8 align 8 signal by mma init 1 arrive commit wait parity 0", "holds no mbarrier"),
        ("claim smem done bytes 8 align 8 use mbarrier signal by mma init 1 arrive commit wait parity 2", "parity"),
        ("claim smem done bytes 8 align 8 use mbarrier signal by mma init 1 arrive comit wait parity 0", "`comit`"),
        ("claim smem done bytes 8 align 8 use mbarrier signal by mma init 0 arrive commit wait parity 0", "arrivals"),
    ],
)
def test_a_signal_that_cannot_mean_anything_is_refused(line: str, message: str) -> None:
    with pytest.raises(DiagnosticError) as err:
        parse_text(STAGE.format(line=line), "private.kc")
    assert [d.code for d in err.value.diagnostics] == ["E-VALUE" if "comit" not in message else "E-NAME"]
    assert message in err.value.diagnostics[0].message
