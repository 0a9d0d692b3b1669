"""Tensor hand-offs between components: layout maps, primitive models, the route ladder, lowering.

- ``maps``: ``LayoutMap`` (closed-form, evaluates, prints, encodes into Z3) and
  ``check_map`` (L-MAP with witnesses).
- ``library``: MMA accumulator placements and tcgen05.ld fragments as layout maps.
- ``tensors``: the inputs (``TensorExport``, ``TensorImport``, ``Lends``, ``RoleThreads``)
  and ``check_identity`` (L-TENSOR, L-DTYPE).
- ``primitives`` / ``routes``: the SMT models of tensor-memory load, register copy, warp
  shuffle and shared-memory staging, and ``select_route`` (L-ROUTE, L-SCRATCH).
- ``program`` / ``lower`` / ``simulate``: a route's moves, their CUDA, and a pure-Python
  execution of them.
- ``strategies``: Hypothesis strategies for maps and seams (imported on its own).
"""

from transfer_model.library import (
    TCGEN05_SHAPES,
    LibraryError,
    library_map,
    mma_m16n8k16_f32,
    tcgen05_ld_fragment,
    wgmma_m64nNk16_f32,
)
from transfer_model.lower import LinkConstants, lower
from transfer_model.maps import REGS, SMEM, TMEM, Chunk, LayoutMap, Tile, check_map, equivalent
from transfer_model.primitives import LADDER, RungResult, Witness
from transfer_model.program import Program, build_program
from transfer_model.routes import Route, RouteResult, check_maps, select_route
from transfer_model.simulate import SimulationError, expected, simulate
from transfer_model.tensors import ELEM_BYTES, Lends, RoleThreads, TensorExport, TensorImport, check_identity

__all__ = [
    "ELEM_BYTES",
    "LADDER",
    "REGS",
    "SMEM",
    "TCGEN05_SHAPES",
    "TMEM",
    "Chunk",
    "LayoutMap",
    "Lends",
    "LibraryError",
    "LinkConstants",
    "Program",
    "RoleThreads",
    "Route",
    "RouteResult",
    "RungResult",
    "SimulationError",
    "TensorExport",
    "TensorImport",
    "Tile",
    "Witness",
    "build_program",
    "check_identity",
    "check_map",
    "check_maps",
    "equivalent",
    "expected",
    "library_map",
    "lower",
    "mma_m16n8k16_f32",
    "select_route",
    "simulate",
    "tcgen05_ld_fragment",
    "wgmma_m64nNk16_f32",
]
