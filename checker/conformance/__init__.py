"""Two-sided contracts: does a component's compiled code keep its own contract?

``kernlink pack`` compiles each component to PTX beside its LTO IR (same front end
and flags, plus ``-lineinfo``); the PTX is stored in the package (payload
``code.ptx``) and analysed here:

1. :mod:`.ptx` reads the module (functions, instructions, ``.shared`` declarations);
2. :mod:`.values` classifies every register — constant, from a handle, params load,
   arithmetic on them, or unknown — by a flow-insensitive fixed point;
3. :mod:`.facts` lists what the checks read (barriers, mbarrier inits, expect-tx and
   copy sizes, setmaxnreg, shared-memory addresses, atomics, fences, proxies, launch
   directives, tensor-memory allocations, absolute thread indexing): contract-free,
   recorded in the manifest (``conformance``) and derived again from the payload;
4. :mod:`.checks` judges the facts against the stage's contract.

Each violation is a typed finding, which the clause ``checker/clauses/l_conform.py``
words as an ``L-CONFORM`` diagnostic with two sides: the contract line and the PTX
line (and the CUDA line where ``-lineinfo`` gives it). What the analysis cannot decide
is an ``I-CONFORM`` note naming the instruction (an error under ``--strict``): unknown
is never a pass. This package reads the PTX text it is given;
it does not compile (the layering keeps the checker below the linker).
"""

from __future__ import annotations

from checker.conformance.checks import CHECKS, PROTOCOL_CHECKS, check
from checker.conformance.context import Finding
from package.codefacts import FACTS_VERSION, MANIFEST_KEY, PTX_PAYLOAD, CodeFacts, Fact, derive, recorded


def ptx_display(package: str) -> str:
    """How a package's PTX payload is named in diagnostics (and in the source map)."""
    return f"{package}!{PTX_PAYLOAD}"


def source_display(package: str) -> str:
    """How a package's CUDA source payload is named in diagnostics (and in the source map)."""
    return f"{package}!source.cu"


__all__ = [
    "CHECKS",
    "FACTS_VERSION",
    "MANIFEST_KEY",
    "PROTOCOL_CHECKS",
    "PTX_PAYLOAD",
    "CodeFacts",
    "Fact",
    "Finding",
    "check",
    "derive",
    "ptx_display",
    "recorded",
    "source_display",
]
