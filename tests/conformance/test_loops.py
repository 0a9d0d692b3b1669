"""A ring side run by one of N alternative k-loops chosen at run time: `loops N` (specs/language.md §8.8).

The swap-AB consumer (specs/examples/gemm_swiglu/persistent/consumer_swapab.cuh, the code consumer_swapab.cu
instantiates), edited to choose per
unit of work between two instantiations of its k-loop, `mainloop<16>` when `p->m <= 16` and
`mainloop<32>` otherwise, as production kernels dispatch tile shapes inside one cubin.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from kernlink.cli import main as kernlink
from packing.pack import build, conformance_findings

PERSISTENT = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
LOOP = "        mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);\n"
SMALL = "gs::mainloop<16, 1, 2, 1, 1>(acc16, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);\n"
ACC = "    float acc[2][kN / 2];\n"
CURSOR = "    RingCursor cur;\n"
CHOICE = f"        if (p->m <= 16u) {{\n            {SMALL}        }} else {{\n    {LOOP}        }}\n"
SEQUENCE = f"        {SMALL}{LOOP}"
RESET = "            cur = gs::RingCursor{};\n"


def _consumer(tmp_path: Path, code: str, loops: int | None, cursor: str = CURSOR) -> tuple[Path, Path]:
    """The edited consumer's source and contract (``loops``: the `loops N` its side states, if any)."""
    folder = tmp_path / "persistent"
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build"))
    shared = folder / "consumer_swapab.cuh"
    text = shared.read_text()
    assert text.count(LOOP) == text.count(ACC) == text.count(CURSOR) == 1
    text = text.replace(LOOP, code).replace(ACC, ACC + "    float acc16[2][8];\n").replace(CURSOR, cursor)
    shared.write_text(text)
    source = folder / "consumer_swapab.cu"
    contract = folder / "consumer_swapab.kc"
    if loops is not None:
        kc = contract.read_text()
        contract.write_text(kc.replace("        full wait\n", f"        loops {loops}\n        full wait\n"))
    return source, contract


def _pack(tmp_path: Path, code: str, loops: int | None, strict: bool = True, cursor: str = CURSOR) -> list[Any]:
    source, contract = _consumer(tmp_path, code, loops, cursor)
    return conformance_findings(build(source, contract), tmp_path / "x.kpkg", strict=strict)


def _only(found: list[Any], check: str) -> Any:
    (diag,) = found
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == check, diag.message
    assert any(lab.span.file.endswith("consumer_swapab.kc") for lab in diag.labels)
    assert any(lab.span.file.endswith("!code.ptx") for lab in diag.labels)
    return diag


def test_two_k_loops_without_loops_2_are_rejected_as_an_unstated_step(tmp_path: Path) -> None:
    diag = _only(_pack(tmp_path, CHOICE, None), "ring-step")
    assert "a step (`full wait`) its consume side does not state" in diag.message


def test_two_alternative_k_loops_with_loops_2_pack_strict(tmp_path: Path) -> None:
    assert _pack(tmp_path, CHOICE, 2) == []


def test_loops_3_over_two_loops_is_rejected(tmp_path: Path) -> None:
    diag = _only(_pack(tmp_path, CHOICE, 3), "ring-step")
    assert "in 2 loop(s), where its consume side states `loops 3`" in diag.message


def test_loops_2_over_the_one_loop_of_the_example_is_rejected(tmp_path: Path) -> None:
    diag = _only(_pack(tmp_path, LOOP, 2), "ring-step")
    assert "in 1 loop(s), where its consume side states `loops 2`" in diag.message


def test_two_loops_in_sequence_per_unit_are_no_alternatives(tmp_path: Path) -> None:
    diag = _only(_pack(tmp_path, SEQUENCE, 2), "ring-step")
    assert "one after another within a unit of work" in diag.message


def test_an_alternative_that_resets_the_cursor_before_its_loop_is_rejected_once(tmp_path: Path) -> None:
    reset = CHOICE.replace(f"            {SMALL}", RESET + f"            {SMALL}")
    diag = _only(_pack(tmp_path, reset, 2), "wait-parity")
    assert "from the same slot and parity on every pass of the loop around it (a ring cursor" in diag.message


def test_an_alternative_that_resets_the_cursor_after_its_loop_is_rejected_at_the_other(tmp_path: Path) -> None:
    reset = CHOICE.replace("        } else {\n", RESET + "        } else {\n")
    diag = _only(_pack(tmp_path, reset, 2), "wait-parity")
    assert "after one that ran its alternative loop" in diag.message


def test_an_alternative_with_a_cursor_of_its_own_is_undecided_never_a_pass(tmp_path: Path) -> None:
    # each loop carries its own cursor: the other loop's units never move it
    own = CHOICE.replace("(acc16, ring, cur,", "(acc16, ring, cur16,")
    cursors = CURSOR + "    gs::RingCursor cur16;\n"
    found = _pack(tmp_path, own, 2, strict=False, cursor=cursors)
    assert found and all(d.code == "I-CONFORM" for d in found)
    assert "cannot decide the ring position" in found[0].message
    strict = _pack(tmp_path / "strict", own, 2, cursor=cursors)
    assert strict and all(d.code == "L-CONFORM" for d in strict)


def test_kernlink_pack_strict_writes_the_package_of_two_alternatives(tmp_path: Path) -> None:
    source, contract = _consumer(tmp_path, CHOICE, 2)
    out = tmp_path / "alternatives.kpkg"
    assert kernlink(["pack", str(source), "--contract", str(contract), "--strict", "-o", str(out)]) == 0
    assert out.is_file()


# The swap-AB producer: its k-loop twice, the small-M copy loading X with W's cache policy.
K_LOOP_START = "        for (unsigned kt = w.k_begin;"


def _producer(tmp_path: Path, loops: int | None, drop: str = "") -> list[Any]:
    folder = tmp_path / "persistent"
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build"))
    shared = folder / "producer_swapab.cuh"  # the code producer_swapab.cu instantiates
    text = shared.read_text()
    start = text.index(K_LOOP_START)
    end = text.index("    }\n}\n", start)  # the k-loop runs to the end of the loop over units
    loop = text[start:end]
    small = loop.replace("tmap_x, k0, m0, full, pol_x)", "tmap_x, k0, m0, full, pol_w)")
    assert small != loop
    if drop:
        assert small.count(drop) == 1
        small = small.replace(drop, "")
    small = "".join("    " + line if line.strip() else line for line in small.splitlines(keepends=True))
    shared.write_text(
        text[:start] + "        if (p->m <= 16u) {\n" + small + "        } else {\n" + loop + "        }\n" + text[end:]
    )
    source = folder / "producer_swapab.cu"
    contract = folder / "producer_swapab.kc"
    if loops is not None:
        kc = contract.read_text()
        contract.write_text(kc.replace("        empty wait\n", f"        loops {loops}\n        empty wait\n"))
    return conformance_findings(build(source, contract), tmp_path / "x.kpkg", strict=True)


def test_the_producer_with_two_alternative_k_loops_needs_loops_2(tmp_path: Path) -> None:
    (diag,) = _producer(tmp_path / "plain", None)
    assert dict(diag.data)["check"] == "ring-step" and "`empty wait`) its produce side does not state" in diag.message
    assert _producer(tmp_path / "loops", 2) == []


def test_a_step_missing_from_one_alternative_names_that_loop(tmp_path: Path) -> None:
    # one mistake, one diagnostic: the fill's byte accounting (copy-bytes) follows from the missing arrive
    (missing,) = _producer(tmp_path, 2, drop="mbar_arrive_expect_tx(full, 2u * kHalf + kBytesX);")
    assert missing.code == "L-CONFORM" and dict(missing.data)["check"] == "ring-step"
    assert "never runs `full arrive` of ring `kv` in its loop (the alternative loop of `loops N`" in missing.message


def test_a_step_no_alternative_runs_is_one_finding(tmp_path: Path) -> None:
    source, contract = _consumer(tmp_path, CHOICE, 2)
    kc = contract.read_text()
    contract.write_text(kc.replace("        reads async\n", "        reads async\n        empty wait\n"))
    (diag,) = conformance_findings(build(source, contract), tmp_path / "x.kpkg", strict=True)
    assert diag.code == "L-CONFORM" and "never runs `empty wait` of ring `kv` in its loop:" in diag.message
