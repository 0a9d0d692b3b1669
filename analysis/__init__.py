"""The check pipeline, the plan a link follows, and the fit of a composition to targets.

:mod:`analysis.pipeline` runs one check — resolve, clauses, place, route — with an explicit
per-check context; :mod:`analysis.downstream` is its placement-and-routes step;
:mod:`analysis.fit` re-runs it per target and searches repairs. Above the transfer model (it
routes) and below the linker (which links what it accepted).
"""
