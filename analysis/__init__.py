"""The check pipeline and the plan a link follows.

:mod:`analysis.pipeline` runs one check — resolve, clauses, place, route — with an explicit
per-check context; :mod:`analysis.downstream` is its placement-and-routes step. Above the
transfer model (it routes) and below the linker (which links what it accepted).
"""
