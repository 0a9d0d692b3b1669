"""`kernlink draft`: a contract skeleton derived from a component's compiled code.

:mod:`.code` reads the PTX (through :mod:`package.codefacts`), :mod:`.derive` turns it into
a stage and the values it cannot decide, :mod:`.render` prints both as a canonical
contract, and :mod:`.tally` compares a draft with a hand-written contract. It sits in
``analysis`` because it reads the handle naming scheme of the checker (``checker.handles``'
inverse) and prints contracts, but compiles nothing: ``kernlink draft`` (kernlink/cmd_draft.py)
compiles the source with the linker's toolchain and hands the PTX and the compiler's
params layouts down.
"""

from analysis.draft.compose import Composition
from analysis.draft.derive import draft
from analysis.draft.model import COMPOSED, MARKER, Composed, Draft, FieldLayout, Layouts, StructLayout, Undecided
from analysis.draft.render import render
from analysis.draft.tally import Tally, tally, values

__all__ = [
    "COMPOSED",
    "MARKER",
    "Composed",
    "Composition",
    "Draft",
    "FieldLayout",
    "Layouts",
    "StructLayout",
    "Tally",
    "Undecided",
    "draft",
    "render",
    "tally",
    "values",
]
