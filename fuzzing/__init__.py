"""Mutation campaigns against a user's composition (``kernlink fuzz PIPELINE.kp``).

A campaign loads the composition as ``kernlink check`` does, checks it (it must be
accepted), then checks mutants of it: each mutant applies one or more edits of the
catalogue in :mod:`fuzzing.compositions` to the ASTs of the stages and the
pipeline, prints every edited block, parses the text back and checks the result the
way ``kernlink check`` checks a user's files (packages keep what they captured):
resolution, every selected clause, then, on acceptance, the joint placement
(:func:`analysis.pipeline.analyse`, the pipeline ``kernlink check`` runs). Each mutant
ends in one of three states:

- **rejected** by one or more clauses, or by placement (the report counts the codes
  per mutation kind, placement's marked as such);
- **accepted**, then re-verified by the independent checks (:class:`Oracle`): the
  placement verifier and the explicit-state protocol explorer, where they apply;
- a **checker bug**: the checker raised or reported ``E-INTERNAL``, a rejection carries
  an unregistered code or no source span, a printed edit did not parse back, or an
  independent check refuted an accepted mutant. Bugs are shrunk (delta debugging over
  the edits) and reported with the mutated contract text.

Mutant ``i`` of seed ``s`` is always the same mutation: the first mutants walk every
single edit of the catalogue in an order fixed by the seed; later ones stack 2 to
``max_edits`` edits drawn from ``random.Random(f"{s}:{i}")``. A budget of seconds stops
after a prefix of that sequence, so ``--seed s --examples n`` replays it.

Modules: ``subject`` (the composition under test), ``oracles`` (independent re-verification:
the placement verifier and ``contract_oracle``, an explicit-state explorer read straight from
the contracts), ``check`` (one mutant: classification and outcome), ``mutation`` (which mutation is
mutant ``i``; shrinking), ``campaign`` (running mutants serially or in workers) and ``report``
(a finished campaign). ``kernlink fuzz`` (kernlink/cmd_fuzz.py) is the command line.

The generators are the public Hypothesis strategies, and import nothing of the campaign:
``compositions`` (compositions the checker accepts, and the catalogue of one-line edits the
campaigns draw from) and ``strategies`` (well-formed contracts, one strategy per item kind).
"""
