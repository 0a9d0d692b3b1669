"""The linked examples, shared with tests/link (the GPU skip rule is tests/conftest.py's)."""

from tests.link.conftest import linked, pipelines

__all__ = ["linked", "pipelines"]
