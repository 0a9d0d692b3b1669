"""FlashAttention 4 (CuTe DSL) rows for ``bench/attention.py --fa4 SITE``.

FA4's ``flash_attn.cute.flash_attn_func`` offers four of the family's variants: non-causal,
causal, sliding window ``(left, right)`` and tanh softcap (on the scaled scores, as the
family's ``score_ref``). Each row is checked against the same float32 reference as kernlink's
kernels (at a small shape) and timed at the bench's shape in the same process. FA4 is loaded
from a site folder (``site.addsitedir``: its ``nvidia_cutlass_dsl`` puts ``cutlass`` on the path
with a ``.pth``); ``bench/gpu/fa4_install.sh`` builds that folder on the device.
"""

from __future__ import annotations

import site
from collections.abc import Callable
from typing import Any, Protocol

import torch


class Prob(Protocol):
    """What a row reads of ``bench/attention.py``'s ``Problem``."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    d: int
    mask_args: tuple[int, int]

    def reference(self) -> tuple[torch.Tensor, torch.Tensor]: ...

    def kept_pairs(self) -> float: ...


def load(folder: str) -> Callable[..., Any]:
    """FA4's forward, from ``folder``."""
    site.addsitedir(folder)
    from flash_attn.cute import flash_attn_func

    return flash_attn_func  # type: ignore[no-any-return]


def options(mask: str, score: str, mask_args: tuple[int, int], softcap: float) -> dict[str, Any] | None:
    """FA4's keyword arguments for a variant, or None where FA4 does not offer it."""
    extra: dict[str, Any] = {}
    if score == "softcap":
        extra["softcap"] = softcap
    elif score != "none":
        return None
    if mask == "none":
        return extra
    if mask == "causal":
        return {**extra, "causal": True}
    if mask == "window":
        return {**extra, "window_size": mask_args}
    return None


def runner(fa4: Callable[..., Any], prob: Prob, opts: dict[str, Any]) -> Callable[[], torch.Tensor]:
    """FA4's forward on ``prob`` as a no-argument call (its inputs transposed once, outside the call)."""
    q, k, v = (t.transpose(1, 2).contiguous() for t in (prob.q, prob.k, prob.v))  # FA4 takes B S H D

    def fn() -> torch.Tensor:
        out = fa4(q, k, v, **opts)
        return out[0] if isinstance(out, tuple) else out

    return fn


def check(fa4: Callable[..., Any], prob: Prob, opts: dict[str, Any]) -> dict[str, Any]:
    """FA4's output against the float32 reference of ``prob``."""
    ref, _ = prob.reference()
    got = runner(fa4, prob, opts)().transpose(1, 2).float()
    err = ((got - ref).norm() / ref.norm()).item()
    return {"rel_err": err, "ok": bool(err < 1e-2)}


def row(
    fa4: Callable[..., Any], name: str, seq: int, prob: Prob, opts: dict[str, Any], bench: Callable[..., float]
) -> dict[str, Any]:
    """FA4 timed on ``prob`` (the bench's shape)."""
    out: dict[str, Any] = {"kernel": "fa4", "variant": name, "seq": seq}
    try:
        fn = runner(fa4, prob, opts)
        got = fn()
        torch.cuda.synchronize()
        ms = bench(fn)
        out.update(ms=ms, tflops=4.0 * prob.kept_pairs() * prob.d / ms / 1e9, ok=bool(torch.isfinite(got).all()))
    except Exception as err:  # a baseline that fails is a row saying so, not a failed bench
        out.update(ok=False, error=f"{type(err).__name__}: {err}"[:300])
    return out
