"""GPU tests of this folder carry ``gpu`` and are skipped cleanly without a GPU."""

from __future__ import annotations
