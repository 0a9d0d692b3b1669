"""The linked examples (shared with tests/link) and the GPU skip rule."""

from tests.link.conftest import linked, pipelines, pytest_runtest_setup

__all__ = ["linked", "pipelines", "pytest_runtest_setup"]
