"""A composition as ASTs: its pipeline and the stages it uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contract_lang import ast as A
from contract_lang.printer import print_file


@dataclass(frozen=True)
class Bundle:
    """A composition as ASTs: the pipeline and the stages it uses (printing order: stages first)."""

    pipeline: A.Pipeline
    stages: tuple[A.Stage, ...]

    @property
    def units(self) -> tuple[A.Stage | A.Pipeline, ...]:
        """The blocks edits address: every stage, then the pipeline (index ``len(stages)``)."""
        return (*self.stages, self.pipeline)

    def source_file(self, path: str = "<bundle>") -> A.SourceFile:
        return A.SourceFile(path, self.units)

    def text(self) -> str:
        """The whole composition as one file: each stage, then the pipeline."""
        return print_file(self.source_file())

    @classmethod
    def of(cls, units: Sequence[A.Stage | A.Pipeline]) -> Bundle:
        stages = tuple(u for u in units if isinstance(u, A.Stage))
        pipeline = next(u for u in units if isinstance(u, A.Pipeline))
        return cls(pipeline, stages)
