"""The per-target hardware table, as the checker imports it.

The table lives in the bottom layer, :mod:`hardware.targets` (so that the contract
language's generators, the checker, placement and the linker read one copy), and the
formulas over it in :mod:`hardware.residency`. This module re-exports the table's names
for the checker's modules.
"""

from hardware.targets import (
    FEATURE_SOURCES,
    SCALAR_ALIGN_SOURCE,
    SCALAR_SIZES,
    SOURCE_TAGS,
    TARGETS,
    Sourced,
    TargetSpec,
    numeric_fields,
    scalar_align,
    scalar_size,
    target,
    target_for_sm,
)

__all__ = [
    "FEATURE_SOURCES",
    "SCALAR_ALIGN_SOURCE",
    "SCALAR_SIZES",
    "SOURCE_TAGS",
    "TARGETS",
    "Sourced",
    "TargetSpec",
    "numeric_fields",
    "scalar_align",
    "scalar_size",
    "target",
    "target_for_sm",
]
