"""Packing a component: compile its source (CUDA, Triton, TileLang) to LTO IR, capture its symbols and
params layout, check it against its contract, write the .kpkg; and the binding that rebuilds a package
at link to show its checked PTX is its LTO IR's code."""
