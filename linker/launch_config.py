"""How a linked kernel is launched: one record, written once into ``link.json`` (``launch``), read by every launcher.

``kernel.h`` (linker/host_header.py writes its macros and launch code from it),
``run_linked``, ``kernlink.Session`` with its CUDA-graph capture, and the parity timing
(through runtime/launch.py ``enqueue``) all take the block size, the dynamic shared memory,
the grid, the cluster shape and whether the launch is cooperative from this record, and
nothing else: a launcher with its own idea of the geometry is how the C header came to
launch a cluster kernel without its cluster attributes while the Python launcher set them.

The record holds the kernel's name, its block size and dynamic shared memory (the
dispatch kernel's), the launch kind and ``blocks_per_sm``, the grid the pipeline states
(``grid N``, or ``grid resident``), ``cooperative``, the cluster shape and whether that
shape is above the target's portable maximum (the launch must then allow a non-portable
cluster size). :meth:`LaunchConfig.blocks` decides the grid of one launch, and
:meth:`LaunchConfig.plan` everything one launch passes to the driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the launchers import this module: they need no checker or generator
    from analysis.link_inputs import LinkInputs
    from linker.artifacts import Dispatch


class LaunchRefused(ValueError):
    """A grid the link's launch configuration does not allow; ``help`` says what would do."""

    def __init__(self, message: str, help_text: str) -> None:
        super().__init__(message)
        self.help = help_text


@dataclass(frozen=True)
class Launch:
    """What one launch passes to the driver: ``cuLaunchKernelEx`` with these dimensions and attributes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int
    cluster: tuple[int, int, int] | None  # the cluster-dimension attribute (None: not clustered)
    cooperative: bool  # the cooperative attribute
    nonportable_cluster: bool  # the function allows a cluster above the portable size


@dataclass(frozen=True)
class LaunchConfig:
    """The launch configuration of one link (module docstring)."""

    kernel: str
    threads: int
    dynamic_smem: int
    kind: str  # "fixed" | "persistent"
    blocks_per_sm: int
    grid: int | None  # `grid N`
    resident: bool  # `grid resident`
    cooperative: bool
    cluster: tuple[int, int, int]
    nonportable_cluster: bool

    @property
    def clustered(self) -> bool:
        return self.cluster != (1, 1, 1)

    def blocks(self, given: int | None, sms: int) -> int:
        """The blocks one launch runs on a device of ``sms`` SMs, ``given`` by the caller or not.

        The stated ``grid N`` (a caller's other count is refused: the check proved its
        residency for N); else the caller's count (above SMs × ``blocks_per_sm`` refused
        under ``grid resident``); else SMs × ``blocks_per_sm`` for ``grid resident`` and a
        persistent launch. A fixed launch that states no grid needs the caller's count.
        """
        resident = sms * self.blocks_per_sm
        if self.grid is not None:
            if given is not None and given != self.grid:
                raise LaunchRefused(
                    f"the link states `grid {self.grid}`: the check proved its launch for {self.grid} blocks, "
                    f"not {given}",
                    "launch it with the grid the pipeline states (leave the grid out)",
                )
            return self.grid
        if given is not None:
            if self.resident and given > resident:
                raise LaunchRefused(
                    f"the link states `grid resident`: {self.blocks_per_sm} block(s) per SM on {sms} SMs hold "
                    f"{resident} blocks at once, not {given}",
                    f"launch at most {resident} blocks (leave the grid out for exactly that)",
                )
            return given
        if self.resident or self.kind == "persistent":
            return resident
        raise LaunchRefused("a fixed launch that states no grid needs a grid size", "pass `grid=` (blocks)")

    def plan(self, given: int | None, sms: int) -> Launch:
        """Everything one launch of ``blocks(given, sms)`` blocks passes to the driver."""
        return Launch(
            (self.blocks(given, sms), 1, 1),
            (self.threads, 1, 1),
            self.dynamic_smem,
            self.cluster if self.clustered else None,
            self.cooperative,
            self.nonportable_cluster,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "threads": self.threads,
            "dynamic_smem": self.dynamic_smem,
            "kind": self.kind,
            "blocks_per_sm": self.blocks_per_sm,
            "grid": self.grid,
            "resident": self.resident,
            "cooperative": self.cooperative,
            "cluster": list(self.cluster),
            "nonportable_cluster": self.nonportable_cluster,
        }

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> LaunchConfig:
        """The record ``as_json`` wrote; ``ValueError`` (``TypeError``, ``KeyError``) when it is malformed."""
        x, y, z = (int(v) for v in record["cluster"])
        grid = record["grid"]
        config = cls(
            str(record["kernel"]),
            int(record["threads"]),
            int(record["dynamic_smem"]),
            str(record["kind"]),
            int(record["blocks_per_sm"]),
            None if grid is None else int(grid),
            bool(record["resident"]),
            bool(record["cooperative"]),
            (x, y, z),
            bool(record["nonportable_cluster"]),
        )
        if config.kind not in ("fixed", "persistent") or min(config.threads, config.blocks_per_sm, x, y, z) < 1:
            raise ValueError(f"launch configuration out of range: {dict(record)}")
        return config


def launch_config(link: LinkInputs, dispatch: Dispatch) -> LaunchConfig:
    """The launch configuration of a link: the generated dispatch kernel's geometry, and the grid and
    ``cooperative`` the launch lines state (L-LAUNCH has checked that they agree)."""
    size = dispatch.cluster[0] * dispatch.cluster[1] * dispatch.cluster[2]
    return LaunchConfig(
        dispatch.kernel,
        dispatch.threads,
        dispatch.dynamic_smem,
        dispatch.launch,
        link.launch.blocks,
        link.launch.grid,
        link.launch.resident,
        link.launch.cooperative,
        dispatch.cluster,
        link.target is not None and size > link.target.cluster_portable_max,
    )


def describe(config: LaunchConfig) -> str:
    """The launch configuration in words, for the link map."""
    if config.grid is not None:
        grid = f"grid {config.grid} (stated)"
    elif config.resident or config.kind == "persistent":
        grid = f"grid resident: SMs x {config.blocks_per_sm}"
    else:
        grid = "the caller's grid"
    parts = [grid, f"block {config.threads}", f"{config.dynamic_smem} B dynamic shared memory"]
    if config.clustered:
        shape = "x".join(map(str, config.cluster))
        allowed = " (non-portable size allowed)" if config.nonportable_cluster else ""
        parts.append(f"cluster attribute {shape}{allowed}")
    if config.cooperative:
        parts.append("cooperative")
    return "; ".join(parts)
