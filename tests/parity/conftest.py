"""Compositions for the parity tests, packed once per session into a scratch folder.

- ``hello``, ``ring``, ``moe4`` and ``gemm_swiglu``: the reference examples, as a user packs them;
- ``unfoldable``: hello whose provider marks its export ``__noinline__`` — the call seam
  cannot fold, in the link or in one unit (the fixture the issue asks to be reported);
- ``file_dependent``: hello whose provider's code depends on its translation unit's file
  name (``sizeof(__FILE__)``), so the one-unit build really differs from the link;
- ``binary_only``: hello whose caller package carries no source.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from package.kpkg import PAYLOADS_KEY, read_package, write_package
from package.manifest import SOURCE_PAYLOAD
from tests.link.examples import build_example

NOINLINE = {
    "provider.cu": {'extern "C" __device__ float hello_scale': 'extern "C" __device__ __noinline__ float hello_scale'}
}
FILE_DEPENDENT = {
    "provider.cu": {
        "return x * static_cast<float>(kScaleFactor);": (
            "return x * static_cast<float>(kScaleFactor) + (sizeof(__FILE__) - 12u);"
        )
    }
}


def strip_source(package: Path) -> None:
    """Rewrite a package without its source payload (a binary-only package)."""
    pkg = read_package(package)
    manifest = {k: v for k, v in pkg.manifest.items() if k != PAYLOADS_KEY}
    write_package(package, manifest, {k: v for k, v in pkg.payloads.items() if k != SOURCE_PAYLOAD})


@pytest.fixture(scope="session")
def compositions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("parity")
    out = {
        "hello": build_example("hello", root / "plain"),
        "ring": build_example("ring", root / "plain"),
        # moe4's components call the generated counter and ring-wait functions (`kl_*_counter_add`, `kl_*_full_wait`)
        "moe4": build_example("moe4", root / "plain"),
        "gemm_swiglu": build_example("gemm_swiglu", root / "plain"),
        "unfoldable": build_example("hello", root / "unfoldable", NOINLINE),
        "file_dependent": build_example("hello", root / "file_dependent", FILE_DEPENDENT),
        "binary_only": build_example("hello", root / "binary_only"),
    }
    strip_source(out["binary_only"].parent / "build" / "caller.kpkg")
    return out
