"""The clause registry: one explicit list, one module per clause (see checker/clause.py).

Imports are sorted; the CLAUSES tuple is grouped by category as in specs/clauses.md.
"""

from __future__ import annotations

from checker.clause import Clause
from checker.clauses.l_align import AlignClause
from checker.clauses.l_ambiguous import AmbiguousClause
from checker.clauses.l_arrive import ArriveClause
from checker.clauses.l_assume import AssumeClause
from checker.clauses.l_barrier import BarrierClause
from checker.clauses.l_conform import ConformClause
from checker.clauses.l_cycle import CycleClause
from checker.clauses.l_deadlock import DeadlockClause
from checker.clauses.l_depth import DepthClause
from checker.clauses.l_domain import DomainClause
from checker.clauses.l_dtype import DtypeClause
from checker.clauses.l_fact import FactClause
from checker.clauses.l_feature import FeatureClause
from checker.clauses.l_fence import FenceClause
from checker.clauses.l_generation import GenerationClause
from checker.clauses.l_handle import HandleClause
from checker.clauses.l_init import InitClause
from checker.clauses.l_integrity import IntegrityClause
from checker.clauses.l_launch import LaunchClause
from checker.clauses.l_lifetime import LifetimeClause
from checker.clauses.l_link import LinkClause
from checker.clauses.l_map import MapClause
from checker.clauses.l_overlap import OverlapClause
from checker.clauses.l_owner import OwnerClause
from checker.clauses.l_pair import PairClause
from checker.clauses.l_params import ParamsClause
from checker.clauses.l_parity import ParityClause
from checker.clauses.l_phase import PhaseClause
from checker.clauses.l_proto import ProtoClause
from checker.clauses.l_race import RaceClause
from checker.clauses.l_regrange import RegrangeClause
from checker.clauses.l_regs import RegsClause
from checker.clauses.l_rendezvous import RendezvousClause
from checker.clauses.l_role import RoleClause
from checker.clauses.l_route import RouteClause
from checker.clauses.l_scope import ScopeClause
from checker.clauses.l_scratch import ScratchClause
from checker.clauses.l_sig import SigClause
from checker.clauses.l_site import SiteClause
from checker.clauses.l_stage import StageClause
from checker.clauses.l_symbol import SymbolClause
from checker.clauses.l_target import TargetClause
from checker.clauses.l_tensor import TensorClause
from checker.clauses.l_tmem import TmemClause
from checker.clauses.l_topo import TopoClause
from checker.clauses.l_txbytes import TxbytesClause
from checker.clauses.l_unpaired import UnpairedClause
from checker.clauses.l_unresolved import UnresolvedClause
from checker.clauses.l_version import VersionClause
from checker.clauses.l_view import ViewClause
from checker.clauses.l_warpgroup import WarpgroupClause
from checker.clauses.l_warps import WarpsClause

CLAUSES: tuple[type[Clause], ...] = (
    # composition and packages
    StageClause,
    VersionClause,
    TargetClause,
    FeatureClause,
    IntegrityClause,
    SymbolClause,
    HandleClause,
    ConformClause,
    # roles, warps, registers, launch
    RoleClause,
    WarpsClause,
    WarpgroupClause,
    RegrangeClause,
    RegsClause,
    LaunchClause,
    TopoClause,
    # storage claims and channel structure
    AlignClause,
    BarrierClause,
    DepthClause,
    FenceClause,
    InitClause,
    LifetimeClause,
    OverlapClause,
    PairClause,
    PhaseClause,
    ProtoClause,
    ScopeClause,
    TmemClause,
    UnpairedClause,
    # callables, tensors, facts, communication
    AmbiguousClause,
    AssumeClause,
    CycleClause,
    DomainClause,
    DtypeClause,
    FactClause,
    GenerationClause,
    OwnerClause,
    ParamsClause,
    RendezvousClause,
    SigClause,
    SiteClause,
    TensorClause,
    UnresolvedClause,
    ViewClause,
    # tensor routes (transfer model, after placement)
    MapClause,
    RouteClause,
    ScratchClause,
    # protocol model (SMT)
    ArriveClause,
    TxbytesClause,
    ParityClause,
    RaceClause,
    DeadlockClause,
    # the device link
    LinkClause,
)

# Codes that were used once and retired: never reuse them.
RETIRED: tuple[str, ...] = ()
