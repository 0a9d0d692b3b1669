"""The C names of the handle ABI (specs/handles.md): what a stage's items are called in its object code.

Pure functions of names, below the checker (which checks a component's symbols against them,
``checker/handles.py``) and the linker (which defines them): neither needs the other for a name.
"""

from __future__ import annotations

import re
from typing import Literal

from contract_lang import ast as A

HANDLE_PREFIX = "kl_"
#: Externals that the toolkit itself resolves in every device link.
TOOLKIT_EXTERNS = frozenset({"vprintf", "__assertfail", "malloc", "free"})


def sanitize(name: str) -> str:
    """A stage or item name as it appears in C identifiers: every other character becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def stage_prefix(stage: A.Stage | str) -> str:
    return HANDLE_PREFIX + sanitize(stage if isinstance(stage, str) else stage.name)


def init_hook_symbol(stage: A.Stage | str, ring: str) -> str:
    """The function a stage defines to initialise the barriers of a ring it inits."""
    return f"{sanitize(stage if isinstance(stage, str) else stage.name)}_{sanitize(ring)}_init"


def ring_slot_symbols(stage: A.Stage | str, ring: str, claim: str) -> tuple[str, str]:
    """The slot-0 offset and stride handles through which ``stage`` reads ``claim``'s slots of ``ring``."""
    base = f"{stage_prefix(stage)}_{sanitize(ring)}_{claim}"
    return f"{base}_smem", f"{base}_stride"


def tensor_symbol(stage: A.Stage | str, tensor: str, side: Literal["export", "import"]) -> str:
    """The handle through which ``stage`` runs its side of a tensor connection: ``kl_<stage>_<tensor>_<side>``."""
    return f"{stage_prefix(stage)}_{sanitize(tensor)}_{side}"
