"""The package format, an input of checking: `.kpkg` files, their manifest and schema, what a compiler captured
(symbols, params layouts, the code facts of the PTX payload) and the loader that gathers a composition's inputs.

Below the checker and above the contract language: checking reads packages through this
layer and never imports the linker, which writes packages (`packing/pack.py`) and reads
their object code for the device link.
"""
