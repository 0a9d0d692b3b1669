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
