"""
robot_chain.py: forward kinematics of a URDF chain, written for the tests
independently of ikd (xml.etree, plain Python math), so that the daemon's
answers are checked against the robot description rather than against
ikd's own solver. Used by test_robot_stream.py and the stream benchmark.

Chain(path, base, tip) reads the serial chain from link `base` to link
`tip`: joints in order, their types, origins (xyz, rpy), axes, lower/upper
limits (continuous joints: none) and <limit velocity>. fk(q) gives the
tip's (position [x, y, z], quaternion [x, y, z, w]) in the base frame.
"""
import math
import xml.etree.ElementTree as ET


def _mat_mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def _mat_vec(a, v):
    return [sum(a[i][k] * v[k] for k in range(3)) for i in range(3)]


def _rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr]]


def _axis_angle(a, t):
    n = math.sqrt(sum(x * x for x in a))
    x, y, z = (c / n for c in a)
    c, s = math.cos(t), math.sin(t)
    C = 1 - c
    return [[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
            [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
            [z * x * C - y * s, z * y * C + x * s, c + z * z * C]]


def mat_to_quat(m):
    tr = m[0][0] + m[1][1] + m[2][2]
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        q = [(m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, 0.25 * s]
    elif m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        s = math.sqrt(1.0 + m[0][0] - m[1][1] - m[2][2]) * 2
        q = [0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s]
    elif m[1][1] > m[2][2]:
        s = math.sqrt(1.0 + m[1][1] - m[0][0] - m[2][2]) * 2
        q = [(m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s]
    else:
        s = math.sqrt(1.0 + m[2][2] - m[0][0] - m[1][1]) * 2
        q = [(m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s, (m[1][0] - m[0][1]) / s]
    n = math.sqrt(sum(x * x for x in q))
    return [x / n for x in q]


def quat_angle(a, b):
    """The angle of the rotation between unit quaternions a and b."""
    d = abs(sum(x * y for x, y in zip(a, b)))
    return 2 * math.acos(min(1.0, d))


class Joint:
    pass


class Chain:
    def __init__(self, path, base, tip):
        with open(path) as f:
            self.text = f.read()
        root = ET.fromstring(self.text)
        by_child = {}
        for j in root.findall("joint"):
            by_child[j.find("child").get("link")] = j
        chain = []
        link = tip
        while link != base:
            j = by_child[link]
            chain.append(j)
            link = j.find("parent").get("link")
        chain.reverse()
        self.joints = []
        for j in chain:
            J = Joint()
            J.name = j.get("name")
            J.type = j.get("type")
            o = j.find("origin")
            xyz = [float(x) for x in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()]
            rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
            J.xyz, J.rot = xyz, _rpy(*rpy)
            a = j.find("axis")
            J.axis = [float(x) for x in (a.get("xyz") if a is not None else "1 0 0").split()]
            lim = j.find("limit")
            J.lower = float(lim.get("lower", 0)) if lim is not None else 0.0
            J.upper = float(lim.get("upper", 0)) if lim is not None else 0.0
            J.velocity = float(lim.get("velocity", 0)) if lim is not None and lim.get("velocity") else 0.0
            self.joints.append(J)
        self.movable = [J for J in self.joints if J.type != "fixed"]
        self.dof = len(self.movable)
        self.base, self.tip = base, tip

    def periodic(self, k):
        J = self.movable[k]
        return J.type == "continuous" or (J.type == "revolute" and J.upper - J.lower >= 2 * math.pi)

    def within_limits(self, q, eps=1e-9):
        for J, v in zip(self.movable, q):
            if J.type != "continuous" and not (J.lower - eps <= v <= J.upper + eps):
                return False
        return True

    def fk(self, q):
        R = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
        p = [0.0, 0.0, 0.0]
        k = 0
        for J in self.joints:
            p = [a + b for a, b in zip(p, _mat_vec(R, J.xyz))]
            R = _mat_mul(R, J.rot)
            if J.type in ("revolute", "continuous"):
                R = _mat_mul(R, _axis_angle(J.axis, q[k]))
                k += 1
            elif J.type == "prismatic":
                n = math.sqrt(sum(x * x for x in J.axis))
                p = [a + b for a, b in zip(p, _mat_vec(R, [c / n * q[k] for c in J.axis]))]
                k += 1
        return p, mat_to_quat(R)

    def request(self):
        return {"kind": "urdf", "urdf": self.text, "base": self.base, "tip": self.tip}
