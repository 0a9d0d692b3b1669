"""The hardware layer at the bottom of kernlink: the per-target table and every formula over it.

- :mod:`hardware.targets`: the table (capacities, limits, alignments, with sources);
- :mod:`hardware.residency`: register pool and entry registers, shared-memory charge
  and shares, tensor-memory allocations, blocks per SM.

It imports nothing else of kernlink, so every layer above (contract language,
checker, placement, linker) reads one copy.
"""
