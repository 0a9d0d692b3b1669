"""Compositions that are valid by construction, and realistic one-line edits of any composition.

This is the fuzzing toolkit of the contract language (``fuzzing.strategies`` holds
the *syntactic* strategies: well-formed but not valid ASTs); import from its modules::

    from hypothesis import given
    from hardware.targets import target
    from fuzzing.compositions.bundle import Bundle
    from fuzzing.compositions.draw import mutations
    from fuzzing.compositions.generate import compositions

    @given(compositions(target("sm_90a"), max_stages=3))
    def test_my_tool_accepts(bundle: Bundle) -> None:
        my_tool(bundle.text())            # one stage per block, then the pipeline

    @given(mutations(my_bundle))
    def test_my_tool_never_crashes(mutation) -> None:
        my_tool(mutation.apply(my_bundle).text())

* ``bundle`` — :class:`Bundle`, a composition as ASTs: its pipeline and the stages it
  uses. :meth:`Bundle.text` prints it as one file that ``kernlink.api.check_text`` reads.
* ``generate`` — :func:`compositions` / :func:`contracts`: bundles that the checker
  accepts: every role has an entry and a width, warps fit the block and warpgroup roles
  are aligned, register budgets fit the pool, shared memory and tensor memory fit the
  target's capacities with margin, every ring, counter and callable is paired with
  consistent counts and byte totals, every fact has one owner whose value meets every
  consumer's constraint, launch lines agree. Parameterised by the target (any object with
  the fields of ``hardware.targets.TargetSpec``: :class:`TargetLimits`) and by size.
* ``edit`` — :class:`Edit` (one line replaced or dropped), :class:`Mutation` (edits
  applied together) and :func:`apply_edits`.
* ``catalogue`` — :data:`MUTATION_KINDS` and :func:`edits`: one realistic edit of one line
  (a tile size, a width, a depth range, a byte count, an arrival count, a parity, a fact,
  an alignment, a scope, a dropped ``init by``/``fence``/``wait``, a renamed endpoint, an
  element type, a register budget, a cluster shape…).
* ``draw`` — :func:`mutations` draws the catalogue with Hypothesis (shrinking towards fewer
  and earlier edits); :func:`random_mutation` draws it from a seeded :class:`random.Random`,
  which is how ``kernlink fuzz`` stays fast and reproducible.

Every edit is an AST replacement, so a mutant prints to text that parses back.
"""
