"""
test_cli_chain.py: `ikd chain FILE.urdf --base B --tip T` (server/cli_chain.c),
the helper that prints a URDF file as the chain object of the wire format,
and `ikd --help` naming every subcommand.

The printed object is compared with the file itself (kind urdf, the
document byte for byte, base, tip, nothing else) and registered on a real
daemon (POST /v1/chains answers 201 with the same joints as the URDF read
independently by tests/server/robot_chain.py); FILE "-" reads standard
input and "--base=B" works as "--base B". Each refusal exits 2 with
"ikd chain: <reason>" on standard error and nothing on standard output:
no file, a missing file, a directory, an empty file, a file larger than
the daemon's URDF limit, text that is not UTF-8, a file that is not a URDF
(JSON, plain text), a base or tip that is not a link of the robot (named
now, with the links there are), a tip that is not below the base, --base
or --tip missing or without a value, an unknown flag, two files.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_stream import Daemon, IKD_BIN  # noqa: E402
import robot_chain  # noqa: E402

DATA = os.environ.get("IKD_DATA", "tests/data")
UR5 = os.path.join(DATA, "robots", "ur5.urdf")
IIWA = os.path.join(DATA, "robots", "kuka_iiwa14_r820.urdf")


def ikd(*args, stdin=None):
    """Runs IKD_BIN with args (str or bytes)."""
    return subprocess.run([IKD_BIN, *args], input=stdin, capture_output=True, timeout=30)


class ChainCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name, data):
        p = os.path.join(self.tmp.name, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def refused(self, args, *words, stdin=None):
        r = ikd("chain", *args, stdin=stdin)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 2, (args, err))
        self.assertEqual(r.stdout, b"", args)
        self.assertTrue(err.startswith("ikd chain: "), (args, err))
        for w in words:
            self.assertIn(w, err, args)
        return err

    def test_prints_the_chain_object(self):
        with open(UR5, "rb") as f:
            doc = f.read()
        r = ikd("chain", UR5, "--base", "base_link", "--tip", "tool0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, b"")
        self.assertTrue(r.stdout.endswith(b"}\n"))
        self.assertEqual(r.stdout.count(b"\n"), 1)  # one line
        obj = json.loads(r.stdout)
        self.assertEqual(list(obj), ["kind", "urdf", "base", "tip"])
        self.assertEqual(obj["kind"], "urdf")
        self.assertEqual(obj["urdf"].encode(), doc)
        self.assertEqual((obj["base"], obj["tip"]), ("base_link", "tool0"))
        # standard input and --flag=value give the same
        r2 = ikd("chain", "-", "--tip=tool0", "--base=base_link", stdin=doc)
        self.assertEqual(r2.returncode, 0, r2.stderr)
        self.assertEqual(r2.stdout, r.stdout)

    def test_registers_on_the_daemon(self):
        d = Daemon()
        try:
            for path, base, tip in ((UR5, "base_link", "tool0"),
                                    (IIWA, "base_link", "tool0")):
                r = ikd("chain", path, "--base", base, "--tip", tip)
                self.assertEqual(r.returncode, 0, r.stderr)
                status, text = d.http("POST", "/v1/chains", json.loads(r.stdout))
                self.assertEqual(status, 201, text)
                a = json.loads(text)
                want = robot_chain.Chain(path, base, tip)
                self.assertEqual(a["joint_names"], [j.name for j in want.movable])
                for got, j in zip(a["joints"], want.movable):
                    self.assertAlmostEqual(got["lower"], j.lower)
                    self.assertAlmostEqual(got["upper"], j.upper)
        finally:
            d.stop()

    def test_usage_errors(self):
        self.refused([], "no URDF file given", "usage: ikd chain FILE.urdf --base LINK --tip LINK")
        self.refused([UR5, "--tip", "tool0"], "--base is required")
        self.refused([UR5, "--base", "base_link"], "--tip is required")
        self.refused([UR5, "--tip", "tool0", "--base"], "--base needs a link name")
        self.refused([UR5, "--base=", "--tip", "tool0"], "--base= needs a link name")
        self.refused([UR5, "--base", "base_link", "--tip", "tool0", "--frob"],
                     'unknown flag "--frob"')
        self.refused([UR5, IIWA, "--base", "base_link", "--tip", "tool0"], "one URDF file only")
        self.refused([UR5.encode(), b"--base", b"base\xff", b"--tip", b"tool0"], "must be UTF-8")
        r = ikd("chain", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"usage: ikd chain FILE.urdf --base LINK --tip LINK", r.stdout)

    def test_file_errors(self):
        missing = os.path.join(self.tmp.name, "no-such.urdf")
        self.refused([missing, "--base", "a", "--tip", "b"],
                     "cannot open %s: No such file or directory" % missing)
        self.refused([self.tmp.name, "--base", "a", "--tip", "b"],
                     "cannot read %s: Is a directory" % self.tmp.name)
        self.refused([self.path("empty.urdf", b""), "--base", "a", "--tip", "b"], "is empty")
        big = self.path("big.urdf", b"<robot>" + b" " * (4 << 20) + b"</robot>")
        self.refused([big, "--base", "a", "--tip", "b"], "larger than 4194304 bytes", "--max-urdf")
        latin1 = self.path("latin1.urdf", '<robot name="bras à"/>'.encode("latin-1"))
        self.refused([latin1, "--base", "a", "--tip", "b"], "is not UTF-8")

    def test_not_a_urdf(self):
        js = self.path("chain.json", b'{"kind":"urdf"}')
        self.refused([js, "--base", "a", "--tip", "b"], "invalid_urdf", "malformed XML")
        self.refused(["README.md", "--base", "a", "--tip", "b"], "invalid_urdf", "malformed XML")
        svg = self.path("x.svg", b'<svg xmlns="http://www.w3.org/2000/svg"/>')
        self.refused([svg, "--base", "a", "--tip", "b"], "invalid_urdf")

    def test_wrong_links_reported_now(self):
        err = self.refused([UR5, "--base", "base", "--tip", "tool9"], "invalid_urdf", "tool9")
        self.assertIn("wrist_3_link", err)  # the links there are
        self.refused([UR5, "--base", "nope", "--tip", "tool0"], "invalid_urdf", "'nope'")
        self.refused([UR5, "--base", "tool0", "--tip", "base_link"], "invalid_urdf",
                     "not a descendant")

    def test_help_lists_the_subcommands(self):
        r = ikd("--help")
        self.assertEqual(r.returncode, 0)
        out = r.stdout.decode()
        for line in ("ikd solve [FILE]", "ikd probe [URL]",
                     "ikd chain FILE.urdf --base LINK --tip LINK"):
            self.assertIn(line, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
