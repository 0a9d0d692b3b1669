"""Paths written into link outputs: relative to the pipeline file, whatever the working directory.

Diagnostics printed to a terminal name files relative to the working directory (as the
loader's display names do); ``link.json`` and ``link.map`` are artifacts kept beside a
build, so they name files relative to the pipeline file instead, and the same link
run from any directory writes the same bytes.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import fields, is_dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from diagnostics.span import Span

if TYPE_CHECKING:  # only named in a signature: `kernlink check` builds its parser without the linker
    from linker.linkmap import LinkRecord

# A package's embedded contract is named `<package>!contract.kc`: the path is before the `!`.
_MEMBER = "!"
_INPUTS = (".kp", ".kc", ".kpkg")


def relative_to_pipeline(name: str, pipeline: str) -> str:
    """``name`` (a display name: relative to the working directory, or absolute) relative to
    the directory of the pipeline file ``pipeline`` (a display name too). Names that are not
    paths (``<input>``, ``generated.cu``) are kept."""
    if name.startswith("<") or not pipeline or pipeline.startswith("<"):
        return name
    path, sep, member = name.partition(_MEMBER)
    if not path.endswith(_INPUTS):  # generated files (`generated.cu`) are named as they are
        return name
    base = os.path.dirname(os.path.abspath(pipeline))
    full = os.path.abspath(path)
    moved = os.path.relpath(full, base)
    return moved + sep + member


def relocate_record(record: LinkRecord) -> None:
    """Rewrite the record's file names (pipeline source, every span of its diagnostics and
    placement) relative to its pipeline file, in place."""
    pipeline = record.pipeline_source
    record.diagnostics[:] = [_respan(d, pipeline) for d in record.diagnostics]
    record.placement = _respan(record.placement, pipeline)
    record.pipeline_source = relative_to_pipeline(pipeline, pipeline)


T = TypeVar("T")


def _respan(value: T, pipeline: str) -> T:
    """``value`` with every :class:`Span` inside it relocated (frozen dataclasses rebuilt as needed)."""
    if isinstance(value, Span):
        return replace(value, file=relative_to_pipeline(value.file, pipeline))
    if isinstance(value, tuple):
        return type(value)(_respan(v, pipeline) for v in value) if value and not hasattr(value, "_fields") else value
    if isinstance(value, list):
        return [_respan(v, pipeline) for v in value]  # type: ignore[return-value]
    if is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = _respan(old, pipeline)
            if new is not old:
                changes[f.name] = new
        return replace(value, **changes) if changes else value
    return value


def output_path(value: str) -> str:
    """An argparse ``type`` for a path a command writes: the empty string is refused
    (``-o ""`` would otherwise write into the working directory)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("an output path cannot be empty")
    return value
