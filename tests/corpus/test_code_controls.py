"""Production controls in code: compiled kernels people ship are accepted; their broken twins are rejected by
the right check (issue 27).

``code/<pattern>/pass/`` holds a component's source written as a production kernel does it, over an example
of ``specs/examples/`` (``EXAMPLE``: the folder it replaces the file in, and the contract it is packed with);
``code/<pattern>/<twin>/`` the same with one realistic mistake, ``BROKEN`` naming the L-CONFORM check and
problem that must reject it alone.

- ``carried_release``: the swap-AB consumer with CUTLASS's persistent release order: the slot of k-step
  ``i - 1`` released after k-step ``i``'s ``wgmma.wait_group 1``, the previous unit's last slot at the top of
  the next unit's k-loop, the last unit's after the loop over units (``lag 1``, no release after each unit's
  loop). It was rejected as ``ring-step`` ``missing`` before. Twins: without the drain after the loop over
  units (``drain``), and releasing before the k-step's ``wgmma.wait_group`` (``race``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernlink.api import check
from packing.pack import build, conformance_findings, pack

ROOT = Path(__file__).parent / "code"
EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
#: pattern -> (the example folder, the component its source replaces, the example's pipeline that composes it)
EXAMPLE = {
    "carried_release": ("gemm_swiglu/persistent", "consumer_swapab", "gemm_swiglu_persistent_swapab.kp"),
}
#: pattern -> twin -> (check, problem) of the one L-CONFORM finding that rejects it
BROKEN = {
    "carried_release": {"drain": ("ring-step", "missing"), "race": ("ring-step", "unretired")},
}
#: how each problem's message says it (checker/clauses/l_conform.py)
WORDS = {
    "missing": "never runs `empty arrive` of ring `kv` after its loop on each pass of the loop around it",
    "unretired": "before a `wgmma.wait_group` retired the wgmma group that read it",
}


def _folder(tmp_path: Path, pattern: str, twin: str) -> tuple[Path, Path]:
    """The example's folder with the twin's source in place of its component, and that component's source."""
    example, component, _ = EXAMPLE[pattern]
    folder = tmp_path / Path(example).name
    shutil.copytree(EXAMPLES / example, folder, ignore=shutil.ignore_patterns("build"))
    source = folder / f"{component}.cu"
    shutil.copyfile(ROOT / pattern / twin / source.name, source)
    return folder, source


def test_every_pattern_has_its_twins() -> None:
    assert sorted(p.name for p in ROOT.iterdir() if p.is_dir()) == sorted(EXAMPLE)
    for pattern, twins in BROKEN.items():
        assert sorted(p.name for p in (ROOT / pattern).iterdir() if p.is_dir()) == sorted(["pass", *twins])


@pytest.mark.parametrize("pattern", sorted(EXAMPLE))
def test_the_production_kernel_packs_strict_and_composes(pattern: str, tmp_path: Path) -> None:
    folder, source = _folder(tmp_path, pattern, "pass")
    assert conformance_findings(build(source, source.with_suffix(".kc")), tmp_path / "x.kpkg", strict=True) == []
    pipeline = folder / EXAMPLE[pattern][2]
    for use in (line.split('"')[-2] for line in pipeline.read_text().splitlines() if line.strip().startswith("use ")):
        part = folder / Path(use).with_suffix(".cu").name
        pack(part, part.with_suffix(".kc"), folder / use, strict=True)
    result = check([pipeline], strict=True)
    assert [d for d in result.diagnostics if d.is_error] == []


@pytest.mark.parametrize(
    ("pattern", "twin"), [(p, t) for p, twins in sorted(BROKEN.items()) for t in sorted(twins)], ids=str
)
def test_its_broken_twin_is_rejected_by_the_right_check(pattern: str, twin: str, tmp_path: Path) -> None:
    _, source = _folder(tmp_path, pattern, twin)
    found = conformance_findings(build(source, source.with_suffix(".kc")), tmp_path / "x.kpkg", strict=True)
    check_name, problem = BROKEN[pattern][twin]
    (diag,) = found
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == check_name, diag.message
    assert WORDS[problem] in diag.message, diag.message
    assert any(lab.span.file.endswith(source.with_suffix(".kc").name) for lab in diag.labels)
