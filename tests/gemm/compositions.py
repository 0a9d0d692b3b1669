"""The gemm_swiglu example's producers and its one epilogue, packed into a scratch folder.

``build`` copies specs/examples/gemm_swiglu (contracts, sources, pipelines) into a folder,
applies ``edits`` ({file: {old: new}}) and packs every component into ``build/`` there, as
a user would. ``PRODUCERS`` names each producer's pipeline, stage and package (sm_90a).
``build_sm100`` packs the sm_100a pairing in its ``sm100/`` subfolder: the tcgen05 producer
and the epilogue's unchanged source (``../epilogue.cu``) against its sm_100a contract.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packing.pack import pack

FOLDER = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu"


@dataclass(frozen=True)
class Producer:
    pipeline: str
    stage: str
    component: str
    mma: str  # an instruction of its mainloop, as it appears in the linked PTX


PRODUCERS = {
    "wgmma": Producer("gemm_swiglu.kp", "gemm.mainloop", "mainloop", "wgmma.mma_async.sync.aligned.m64n128k16"),
    "mma_sync": Producer(
        "gemm_swiglu_mma_sync.kp", "gemm.mma_sync", "mma_sync", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    ),
    "smem_acc": Producer(
        "gemm_swiglu_smem_acc.kp", "gemm.smem_acc", "smem_acc", "wgmma.mma_async.sync.aligned.m64n128k16"
    ),
}
COMPONENTS = ("epilogue", *(p.component for p in PRODUCERS.values()))


def build(
    root: Path, edits: Mapping[str, Mapping[str, str]] | None = None, components: tuple[str, ...] = COMPONENTS
) -> Path:
    """Copy the example into ``root``, apply ``edits``, pack ``components``; the folder."""
    shutil.copytree(FOLDER, root, ignore=shutil.ignore_patterns("build"))
    for file, changes in (edits or {}).items():
        text = (root / file).read_text()
        for old, new in changes.items():
            assert old in text, f"{old!r} not in {file}"
            text = text.replace(old, new)
        (root / file).write_text(text)
    for name in components:
        source = root / f"{name}.cu"
        pack(source, source.with_suffix(".kc"), root / "build" / f"{name}.kpkg")
    return root


SM100 = "sm100"
TCGEN05_PIPELINE = "gemm_swiglu_tcgen05.kp"


def build_sm100(root: Path, edits: Mapping[str, Mapping[str, str]] | None = None, packed: bool = True) -> Path:
    """Copy the example into ``root``, apply ``edits`` (paths under ``sm100/``), pack the sm_100a pairing."""
    build(root, {f"{SM100}/{file}": changes for file, changes in (edits or {}).items()}, components=())
    folder = root / SM100
    if packed:
        pack(folder / "tcgen05.cu", folder / "tcgen05.kc", folder / "build" / "tcgen05.kpkg")
        pack(root / "epilogue.cu", folder / "epilogue.kc", folder / "build" / "epilogue.kpkg")
    return folder
