"""Front ends for components written in something other than CUDA C++: TileLang stages (:mod:`.tilelang`)
and Triton kernels (:mod:`.triton`)."""

from __future__ import annotations

from pathlib import Path

from contract_lang import ast as A


def prepare(source: Path, text: str, stage: A.Stage, target: str) -> tuple[str, A.Stage, str]:
    """What `kernlink pack` compiles for ``source``: (CUDA text, the stage's contract, the name it is compiled as).

    A CUDA source is itself; a Triton stage (a ``.py`` that imports ``triton``) or a TileLang stage (any
    other ``.py``) is the component and the contract its front end derives, compiled as
    ``<stem>.triton.cu`` / ``<stem>.tilelang.cu``.
    """
    from packing.frontends import tilelang, triton

    if triton.is_stage(source):
        compiled = triton.lower(source, target)
        return triton.component(compiled, stage), triton.derived_stage(compiled, stage), f"{source.stem}.triton.cu"
    if not tilelang.is_stage(source):
        return text, stage, source.name or "source.cu"
    record = tilelang.lower(source, stage, target)
    return tilelang.component(record, stage), tilelang.derived_stage(record, stage), f"{source.stem}.tilelang.cu"
