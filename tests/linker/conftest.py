"""Skip GPU tests of this folder cleanly on machines without a CUDA driver or device."""

from __future__ import annotations
