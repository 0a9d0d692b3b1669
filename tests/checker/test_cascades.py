"""Root cause first: one mistake, one diagnostic; its dependents stay silent.

The four cascades of issue 12 item 15, each made from the reference GEMM + SwiGLU
composition by one edit: the first error is the root cause and at most one
dependent follows (today none does).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernlink.api import check

EXAMPLE = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu"

# (name, file, old text, new text, the root cause's code, a word its message must hold)
CASCADES = [
    ("keyword typo", "mainloop.kc", "    role producer", "    rol producer", "E-SYNTAX", "`rol`"),
    ("unmet version", "gemm_swiglu.kp", "version ^2.1", "version ^3.0", "L-VERSION", "`^3.0`"),
    (
        "missing use",
        "gemm_swiglu.kp",
        '    use "gemm.mainloop" version ^2.1 from "build/mainloop.kpkg"\n',
        "",
        "L-STAGE",
        "mainloop.kc",
    ),
    (
        "unknown feature",
        "mainloop.kc",
        "requires feature tma,",
        "requires feature tma_multicsat,",
        "E-NAME",
        "`tma_multicsat`",
    ),
]


@pytest.mark.parametrize(("name", "file", "old", "new", "root", "word"), CASCADES, ids=[c[0] for c in CASCADES])
def test_root_cause_first(name: str, file: str, old: str, new: str, root: str, word: str, tmp_path: Path) -> None:
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLE, folder)
    path = folder / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    result = check([folder / "gemm_swiglu.kp"])
    errors = [d for d in result.diagnostics if d.is_error]
    assert errors, f"{name}: accepted"
    assert errors[0].code == root, [f"{d.code}: {d.message}" for d in errors]
    assert word in errors[0].message + " ".join(errors[0].helps)
    assert len(errors) <= 2, [f"{d.code}: {d.message}" for d in errors]


def test_missing_use_suggests_the_line_and_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLE, folder)
    kp = folder / "gemm_swiglu.kp"
    kp.write_text(kp.read_text().replace('    use "gemm.mainloop" version ^2.1 from "build/mainloop.kpkg"\n', ""))
    [diag] = [d for d in check([kp]).diagnostics if d.is_error]
    assert diag.helps == ('add `use "gemm.mainloop" version ^2.2` to the pipeline',)
    assert {lab.span.file.rsplit("/", 1)[-1] for lab in diag.labels} == {"gemm_swiglu.kp", "mainloop.kc", "epilogue.kc"}


def test_an_unrelated_unused_stage_is_not_reported(tmp_path: Path) -> None:
    """A contract beside the pipeline that nothing needs is not a missing `use`."""
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLE, folder)
    (folder / "other.kc").write_text(
        'stage "demo.other" version "1.0.0" {\n    target sm_90a\n'
        "    role other entry other_main warps 4 warpgroup\n}\n"
    )
    assert [d.code for d in check([folder / "gemm_swiglu.kp"]).diagnostics if d.is_error] == []
