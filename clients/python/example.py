#!/usr/bin/python3
"""
example.py: the Python client of ikd in five steps, against a running ikd.

    ikd &                                   # or: make run
    python3 clients/python/example.py [http://127.0.0.1:8080] [TOKEN]

(with the package installed: pip install ./clients/python; or from the
repository's root with PYTHONPATH=clients/python and Debian's
/usr/bin/python3, which sees python3-websockets.)

1. a two-bone leg solved over HTTP;
2. the KUKA iiwa 14 of tests/data registered from its URDF and solved for a
   full pose (position and orientation);
3. a batch of three targets on the registered arm;
4. a stream: the leg follows eight targets over one WebSocket, answers in
   order;
5. a tick: two characters' legs solved by one message.
Run from the repository's root (it reads tests/data/robots/).
"""
import asyncio
import math
import os
import sys

import ikd

URL = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
TOKEN = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("IKD_TOKEN")
LEG = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}

client = ikd.Client(URL, token=TOKEN)

# 1. two bones
a = client.solve(LEG, {"position": [0.2, 0.1, 0.25]})
print("two-bone:", a["status"], "knee at", a["positions"][1])

# 2. a robot from its URDF, full pose
with open("tests/data/robots/kuka_iiwa14_r820.urdf") as f:
    arm = client.register_chain({"kind": "urdf", "urdf": f.read(),
                                 "base": "base_link", "tip": "tool0"})
pose = {"position": [0.5, 0.1, 0.6], "orientation": [0.0, 1.0, 0.0, 0.0]}
a = client.solve(chain_id=arm["id"], target=pose)
print("iiwa:", a["status"], "joints", [round(q, 4) for q in a["joints"]])

# 3. a batch
b = client.batch(chain_id=arm["id"], targets=[
    {"position": [0.5, y, 0.6], "orientation": [0.0, 1.0, 0.0, 0.0]} for y in (-0.1, 0.0, 0.1)])
print("batch:", b["counts"])

# errors carry the code and the JSON path
try:
    client.solve(LEG, {"position": [0.2, 0.1, "high"]})
except ikd.IkdError as e:
    print("refused:", e.code, e.path)


# 4. a stream, and 5. a tick, on asyncio
async def follow():
    aclient = ikd.AsyncClient(URL, token=TOKEN)
    async with aclient.connect() as conn:
        leg = await conn.open("leg", chain=LEG)
        for i in range(8):
            t = 2 * math.pi * i / 8
            sol = await leg.solve({"position": [0.2 * math.cos(t), 0.2 * math.sin(t), 0.3]})
            print("stream seq %d: %s" % (sol.seq, sol.result["status"]))
        await leg.close()
        await conn.open("c1", chain=LEG, options={"fields": ["local_rotations"], "digits": 6})
        await conn.open("c2", chain=LEG, options={"fields": ["local_rotations"], "digits": 6})
        tick = await conn.tick({"c1": {"position": [0.2, 0.1, 0.25]},
                                "c2": {"position": [0.1, -0.1, 0.3]}})
        print("tick %d: %s" % (tick.seq, ", ".join(
            "%s %s" % (it.stream, it.result["status"] if it.ok else it.error.code)
            for it in tick)))

asyncio.run(follow())
