"""
ikd: the Python client of ikd, the inverse-kinematics service.

    import ikd
    c = ikd.Client("http://127.0.0.1:8080", token=None)
    leg = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}
    answer = c.solve(leg, {"position": [0.2, 0.1, 0.25]})   # a SolveAnswer (dict)
    answer["status"], answer["positions"]

    with c.connect() as conn:                      # one WebSocket
        s = conn.open("leg", chain=leg)            # one named stream on it
        sol = s.solve({"position": [0.2, 0.1, 0.3]})   # a Solution
        sol.seq, sol.result["status"]

ikd.AsyncClient is the same on asyncio (`async with c.connect() as conn`).
HTTP goes through the standard library (urllib); streams need the
`websockets` package (10 or later; Debian: python3-websockets), which this
import checks at once rather than at the first connect().

The modules: errors (IkdError), types (typed answers), http (requests,
retries, TLS, re-registration), stream (asyncio streams, ticks, bounded
memory), client (Client, AsyncClient, the blocking connection).
"""
__version__ = "0.2.0"

try:
    import websockets as _websockets
except ImportError as _e:  # pragma: no cover - checked by the tests with python3 -S
    raise ImportError(
        "ikd needs the 'websockets' package (version 10 or later) for its streams: "
        "pip install websockets (or on Debian and Ubuntu: apt install python3-websockets)"
    ) from _e
if int(_websockets.__version__.split(".")[0]) < 10:  # pragma: no cover
    raise ImportError("ikd needs websockets 10 or later (found %s): pip install -U websockets"
                      % _websockets.__version__)

from .errors import CLIENT_CODES, IkdError  # noqa: E402
from .types import (BatchAnswer, ChainInfo, Path, PathEnd, Pose, Result,  # noqa: E402
                    SolveAnswer, Solution, TickItem, TickSolution, TipAnswer)
from .stream import Connection, JsonCodec, Stream  # noqa: E402
from .client import AsyncClient, Client, SyncConnection, SyncStream  # noqa: E402

__all__ = ["Client", "AsyncClient", "Connection", "Stream", "SyncConnection", "SyncStream",
           "JsonCodec", "IkdError", "CLIENT_CODES", "Solution", "PathEnd", "Path",
           "TickItem", "TickSolution", "Result", "SolveAnswer", "BatchAnswer", "ChainInfo",
           "Pose", "TipAnswer", "__version__"]
