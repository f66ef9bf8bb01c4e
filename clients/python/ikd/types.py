"""
ikd.types: the typed answers of the client.

Answers of ikd's HTTP endpoints stay the decoded JSON objects (dicts), typed
as TypedDicts: no copy, and a member a newer ikd adds is still there. The
stream answers are small dataclasses with slots around the decoded "result"
(a Result TypedDict): Solution (a target's or a path sample's answer),
PathEnd, TickItem and TickSolution. The names and meanings of the members
are those of the contract (proto/README.md "Responses", proto/STREAM.md).
"""
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, TypedDict

from .errors import IkdError

__all__ = ["Pose", "TipAnswer", "Result", "SolveAnswer", "BatchAnswer", "ChainInfo",
           "Solution", "PathEnd", "Path", "TickItem", "TickSolution"]

# slots keep the per-message objects small (Python 3.10 and later)
_slots = {"slots": True} if sys.version_info >= (3, 10) else {}


class Pose(TypedDict, total=False):
    position: List[float]
    orientation: List[float]


class TipAnswer(TypedDict, total=False):
    status: str
    code: int
    position: List[float]
    orientation: List[float]
    position_error: float
    orientation_error: float


class Result(TypedDict, total=False):
    """The per-target members of an answer; which of them are there
    depends on the chain and on options.fields ("status" always is)."""
    status: str                # success, no_ik_solution, timed_out, ...
    code: int                  # MoveIt's code: 1, -31, -6, ...
    reason: str
    cause: str
    joints: List[float]
    positions: List[List[float]]
    rotations: List[List[float]]
    local_rotations: List[List[float]]
    tip: Pose
    tips: List[TipAnswer]
    position_error: float
    orientation_error: float
    max_joint_step: float
    arrived: bool
    solutions: List[List[float]]
    solution_count: int
    iterations: int
    restarts: int
    time_ms: float


class SolveAnswer(Result, total=False):
    """POST /v1/solve: a Result with the chain-level members."""
    chain_id: str
    solver: str
    units: str
    frame: str
    joint_names: List[str]
    bone_names: List[str]
    tip_names: List[str]


class BatchAnswer(TypedDict, total=False):
    """POST /v1/solve/batch: results[i] answers targets[i]."""
    chain_id: str
    solver: str
    units: str
    frame: str
    joint_names: List[str]
    bone_names: List[str]
    tip_names: List[str]
    count: int
    counts: Dict[str, int]
    results: List[Result]


class ChainInfo(TypedDict, total=False):
    """POST /v1/chains, GET /v1/chains/{id}: a registered chain."""
    id: str
    kind: str
    dof: int
    joint_names: List[str]
    joints: List[dict]
    solvers: List[str]
    closed_form: dict
    memory_bytes: int
    chain: dict


@dataclass(**_slots)
class Solution:
    """A "solution" message of a stream: the answer of target `seq` (or of a
    path sample: `index` of `count`). `requested` is the seq of the target
    the caller waited for: a target that ikd replaced by a newer one
    (conflation) is answered by the newer target's solution, so `seq` may be
    larger. `skipped` counts the targets ikd dropped since the stream's
    previous solution."""
    stream: str
    seq: int
    skipped: int
    result: Result
    requested: int = 0
    index: Optional[int] = None
    count: Optional[int] = None

    @property
    def ok(self) -> bool:
        return self.result.get("status") == "success"


@dataclass(**_slots)
class PathEnd:
    """The "path_end" message: samples sent and skipped out of count;
    completed is false when a newer target, path or close cut it short."""
    stream: str
    seq: int
    sent: int
    skipped: int
    count: int
    completed: bool


@dataclass(**_slots)
class Path:
    """What Stream.path() returns: every sample's solution, then the end."""
    samples: List[Solution]
    end: PathEnd


@dataclass(**_slots)
class TickItem:
    """One target of a tick: its stream's solution (`result`, `skipped`) or
    the error that refused it (`error`, with the JSON path into the tick
    message, such as "/targets/1/target/orientation")."""
    stream: str
    seq: int
    skipped: int = 0
    result: Optional[Result] = None
    error: Optional[IkdError] = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.result is not None \
            and self.result.get("status") == "success"


@dataclass(**_slots)
class TickSolution:
    """A "tick_solution": one item per target of the tick, in the order of
    the tick's targets. `skipped` counts the ticks ikd dropped (replaced by a
    newer one) since the previous tick_solution; a tick that was replaced
    is answered by the newer tick's solution (`seq` > `requested`)."""
    seq: int
    skipped: int
    items: List[TickItem] = field(default_factory=list)
    requested: int = 0

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def by_stream(self) -> Dict[str, TickItem]:
        return {it.stream: it for it in self.items}
