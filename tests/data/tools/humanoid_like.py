#!/usr/bin/env python3
"""humanoid_like.py: writes tests/data/robots/humanoid_like.urdf, the
project's own whole-body humanoid for the tree tests and benchmarks (not
copied from any robot): an adult's proportions (about 1.7 m), a pelvis as
the root, two 6-joint legs, a 3-joint back (yaw, pitch, roll, as Atlas's
back_bkz, back_bky, back_bkx), two 7-joint arms, and on each hand five
fingers of three joints each (a spread about x, two flexions about y).

Tips: l_foot, r_foot, l_hand, r_hand give the body without its fingers
(29 joints); l_foot, r_foot and the ten *_tip links give it with them
(59 joints). Run it from the repository root to write the file again:
    /usr/bin/python3 tests/data/tools/humanoid_like.py
"""

OUT = "tests/data/robots/humanoid_like.urdf"

links = ["pelvis"]
joints = []


def joint(name, kind, parent, child, xyz, axis=None, lim=None):
    links.append(child)
    joints.append((name, kind, parent, child, xyz, axis, lim))


AX = {"x": "1 0 0", "y": "0 1 0", "z": "0 0 1"}
for s, sy in (("l", 1), ("r", -1)):
    # leg: hip yaw, roll, pitch; knee; ankle pitch, roll
    joint(f"{s}_hip_yaw", "revolute", "pelvis", f"{s}_hip1", f"0 {0.09 * sy} -0.05", "z", (-0.8, 0.8))
    joint(f"{s}_hip_roll", "revolute", f"{s}_hip1", f"{s}_hip2", "0 0 0", "x",
          (-0.5, 0.8) if sy > 0 else (-0.8, 0.5))
    joint(f"{s}_hip_pitch", "revolute", f"{s}_hip2", f"{s}_thigh", "0 0 0", "y", (-1.8, 0.6))
    joint(f"{s}_knee", "revolute", f"{s}_thigh", f"{s}_shin", "0 0 -0.42", "y", (0.0, 2.3))
    joint(f"{s}_ankle_pitch", "revolute", f"{s}_shin", f"{s}_ankle", "0 0 -0.40", "y", (-0.9, 0.6))
    joint(f"{s}_ankle_roll", "revolute", f"{s}_ankle", f"{s}_foot_link", "0 0 0", "x", (-0.4, 0.4))
    joint(f"{s}_sole", "fixed", f"{s}_foot_link", f"{s}_foot", "0.04 0 -0.07")
# back: yaw, pitch, roll (Atlas's back_bkz, back_bky, back_bkx)
joint("back_z", "revolute", "pelvis", "back1", "0 0 0.10", "z", (-0.66, 0.66))
joint("back_y", "revolute", "back1", "back2", "0 0 0.16", "y", (-0.22, 0.54))
joint("back_x", "revolute", "back2", "torso", "0 0 0.05", "x", (-0.52, 0.52))
for s, sy in (("l", 1), ("r", -1)):
    # arm: shoulder pitch, roll, yaw; elbow; wrist yaw, roll, pitch
    joint(f"{s}_shoulder_pitch", "revolute", "torso", f"{s}_shoulder1", f"0 {0.19 * sy} 0.33", "y",
          (-3.1, 1.0))
    joint(f"{s}_shoulder_roll", "revolute", f"{s}_shoulder1", f"{s}_shoulder2", "0 0 0", "x",
          (-0.3, 2.8) if sy > 0 else (-2.8, 0.3))
    joint(f"{s}_shoulder_yaw", "revolute", f"{s}_shoulder2", f"{s}_upper_arm", "0 0 0", "z",
          (-1.6, 1.6))
    joint(f"{s}_elbow", "revolute", f"{s}_upper_arm", f"{s}_forearm", "0 0 -0.28", "y", (-2.5, 0.0))
    joint(f"{s}_wrist_yaw", "revolute", f"{s}_forearm", f"{s}_wrist1", "0 0 -0.12", "z", (-1.6, 1.6))
    joint(f"{s}_wrist_roll", "revolute", f"{s}_wrist1", f"{s}_wrist2", "0 0 -0.13", "x", (-0.8, 0.8))
    joint(f"{s}_wrist_pitch", "revolute", f"{s}_wrist2", f"{s}_palm", "0 0 0", "y", (-1.2, 1.2))
    joint(f"{s}_hand_frame", "fixed", f"{s}_palm", f"{s}_hand", "0 0 -0.05")
    # fingers: from the palm, spread about x, then two flexions about y;
    # the thumb sits forward and higher, the others in a row
    fingers = (("thumb", f"0.03 {0.02 * sy} -0.02", 0.035, 0.03),
               ("index", f"0 {0.03 * sy} -0.09", 0.045, 0.045),
               ("middle", f"0 {0.01 * sy} -0.095", 0.05, 0.05),
               ("ring", f"0 {-0.01 * sy} -0.09", 0.045, 0.045),
               ("pinky", f"0 {-0.03 * sy} -0.08", 0.035, 0.035))
    for f, base, l1, l2 in fingers:
        joint(f"{s}_{f}_spread", "revolute", f"{s}_palm", f"{s}_{f}1", base, "x", (-0.35, 0.35))
        joint(f"{s}_{f}_flex1", "revolute", f"{s}_{f}1", f"{s}_{f}2", "0 0 0", "y", (-1.6, 0.1))
        joint(f"{s}_{f}_flex2", "revolute", f"{s}_{f}2", f"{s}_{f}3", f"0 0 {-l1}", "y", (-1.8, 0.0))
        joint(f"{s}_{f}_tip_frame", "fixed", f"{s}_{f}3", f"{s}_{f}_tip", f"0 0 {-l2}")

with open(OUT, "w") as out:
    out.write('<?xml version="1.0"?>\n')
    out.write("<!-- A whole-body humanoid written for ikd's tree tests and benchmarks (not\n"
              "     copied from any robot), made by tests/data/tools/humanoid_like.py: an\n"
              "     adult's proportions, a pelvis root, 6-joint legs, a 3-joint back (yaw,\n"
              "     pitch, roll), 7-joint arms, five 3-joint fingers on each hand. Tips:\n"
              "     l_foot, r_foot, l_hand, r_hand (29 joints) or l_foot, r_foot and the\n"
              "     ten *_tip links (59 joints). -->\n")
    out.write('<robot name="humanoid_like">\n')
    for l in links:
        out.write(f'  <link name="{l}"/>\n')
    for name, kind, parent, child, xyz, axis, lim in joints:
        out.write(f'  <joint name="{name}" type="{kind}">\n')
        out.write(f'    <parent link="{parent}"/><child link="{child}"/>\n')
        out.write(f'    <origin xyz="{xyz}" rpy="0 0 0"/>')
        if axis:
            out.write(f'<axis xyz="{AX[axis]}"/>\n')
            out.write(f'    <limit lower="{lim[0]}" upper="{lim[1]}" effort="50" velocity="2.0"/>\n')
        else:
            out.write("\n")
        out.write("  </joint>\n")
    out.write("</robot>\n")
