"""The clause registry: one explicit list, one module per clause (see checker/clause.py).

Keep each group's imports and entries in its own section, sorted by code.
"""

from __future__ import annotations

from checker.clause import Clause

# --- roles, warps, registers, launch
# --- storage claims and channel structure
from checker.clauses.l_feature import FeatureClause
from checker.clauses.l_launch import LaunchClause
from checker.clauses.l_pair import PairClause
from checker.clauses.l_regrange import RegrangeClause
from checker.clauses.l_regs import RegsClause
from checker.clauses.l_role import RoleClause

# --- composition and packages
from checker.clauses.l_stage import StageClause
from checker.clauses.l_target import TargetClause
from checker.clauses.l_topo import TopoClause
from checker.clauses.l_unpaired import UnpairedClause
from checker.clauses.l_version import VersionClause
from checker.clauses.l_warpgroup import WarpgroupClause
from checker.clauses.l_warps import WarpsClause

# --- callables, tensors, facts, communication

# --- protocol model (SMT)

CLAUSES: tuple[type[Clause], ...] = (
    # composition and packages
    StageClause,
    VersionClause,
    TargetClause,
    FeatureClause,
    # roles, warps, registers, launch
    RoleClause,
    WarpsClause,
    WarpgroupClause,
    RegrangeClause,
    RegsClause,
    LaunchClause,
    TopoClause,
    # storage claims and channel structure
    PairClause,
    UnpairedClause,
    # callables, tensors, facts, communication
    # protocol model (SMT)
)

# Codes that were used once and retired: never reuse them.
RETIRED: tuple[str, ...] = ()
