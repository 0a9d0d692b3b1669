"""`requires feature` knows exactly the features the hardware table lists for some target."""

from __future__ import annotations

from contract_lang import ast as A
from hardware.targets import FEATURE_SOURCES, TARGETS
from kernlink.api import check_text


def test_vocabulary_is_the_hardware_tables_features() -> None:
    assert set(A.FEATURES) == set(FEATURE_SOURCES)
    listed = set().union(*(t.features for t in TARGETS.values()))
    assert listed <= set(A.FEATURES)


def test_ldmatrix_and_tma_multicast_can_be_required() -> None:
    text = (
        'stage "demo.s" version "1.0.0" {\n    target sm_90a\n'
        "    requires feature ldmatrix, tma_multicast, dsmem\n"
        "    role main entry main_fn warps 4 warpgroup\n}\n"
    )
    result = check_text(text, "s.kc")
    assert [d.code for d in result.diagnostics if d.is_error] == []
