"""The composition under test: its loaded inputs, its bundle of ASTs, and where each stage came from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.pipeline import input_diagnostics
from checker.resolve import select_stages
from fuzzing.compositions.bundle import Bundle
from package.loader import Inputs, StageEntry, UsageError, load


@dataclass(frozen=True)
class Subject:
    """The composition under test: its loaded inputs and the stages its pipeline selected."""

    inputs: Inputs
    bundle: Bundle
    entries: tuple[StageEntry, ...]
    slots: tuple[int, ...]
    """For each stage of the bundle, its index in ``inputs.candidates``."""
    target: str | None = None

    @property
    def name(self) -> str:
        return self.inputs.pipeline_source


def load_subject(paths: Sequence[str], *, target: str | None = None) -> Subject:
    """Load a composition for fuzzing; raises UsageError when no pipeline can be formed."""
    inputs = load(paths)
    if inputs.pipeline is None:
        raise UsageError("no composition to fuzz: " + "; ".join(d.message for d in input_diagnostics(inputs)[:3]))
    chosen, _ = select_stages(inputs.pipeline, inputs.candidates)
    slots: list[int] = []
    for entry in chosen:
        slots.append(
            next(
                i
                for i, c in enumerate(inputs.candidates)
                if c.stage is entry.stage and c.source == entry.source and c.package == entry.package
            )
        )
    bundle = Bundle(inputs.pipeline, tuple(e.stage for e in chosen))
    return Subject(inputs, bundle, tuple(chosen), tuple(slots), target)


def bundle_subject(bundle: Bundle, name: str = "<bundle>", *, target: str | None = None) -> Subject:
    """A subject from ASTs alone (a generated composition), as if read from one file."""
    entries = tuple(StageEntry(s, name, None) for s in bundle.stages)
    inputs = Inputs(pipeline=bundle.pipeline, pipeline_source=name, candidates=list(entries))
    chosen, _ = select_stages(bundle.pipeline, entries)
    slots = tuple(next(i for i, c in enumerate(entries) if c.stage is e.stage) for e in chosen)
    stages = tuple(e.stage for e in chosen)
    return Subject(inputs, Bundle(bundle.pipeline, stages), tuple(chosen), slots, target)
