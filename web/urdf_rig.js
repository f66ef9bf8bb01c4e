/*
 * urdf_rig.js: a robot from a URDF on the workbench: parsed in the page,
 * drawn as capsules from joint to joint (ikd cannot fetch meshes, so none
 * are loaded), posed by ikd's answers on one stream.
 *
 * parseUrdf(text) reads links and joints (origin xyz and rpy, axis, type,
 * limits) with the browser's DOMParser and throws with the reason when the
 * document is not a robot. A UrdfRig builds the robot as a three.js
 * hierarchy, one group per joint: the joint's origin, then its motion
 * (a turn about the axis, or a slide along it), then the child link; ROS's
 * z-up is turned to the screen's y-up by the rig's root group. Its chain is
 * a base link and one or more tips: one tip is a "urdf" chain, several a
 * "tree" chain (README's "tree"); each tip gets a target handle (a sphere
 * parented to the base link, so its local pose is the target in the base
 * frame ikd answers in). The page's own forward kinematics (the hierarchy
 * above, with the answered joints) is what puts each tip on screen, and
 * how far it lands from its target is measured there (tipErrors), apart
 * from the answer's own errors.
 *
 * Collisions (proto/README.md, "Collisions"): the chain carries the robot
 * as drawn as its collision model, `collision_skeleton` with the drawn
 * capsules' radius (links whose URDF has sphere, box or cylinder
 * primitives keep those), and an SRDF that disables the pairs of links two
 * joints apart (a link's grandparent and its siblings): their capsules meet
 * at a short link between them (the iiwa's link_2, 4 and 6 have no length)
 * and would collide in every pose, the pairs MoveIt's setup assistant
 * disables as colliding by default. A URDF ikd cannot model that way is
 * registered without a model (withModel false, modelError says why). The
 * robot's obstacles (obstacles.js) hang under the base link as targets do.
 */
import * as THREE from 'three';
import { capsule, materials } from './stage.js';
import { Obstacles } from './obstacles.js';

const num3 = (s, d = [0, 0, 0]) => {
  if (s == null || s.trim() === '') return d;
  const v = s.trim().split(/\s+/).map(Number);
  return v.length === 3 && v.every(Number.isFinite) ? v : null;
};

/** {name, links: [name], joints: [{name, type, parent, child, xyz, rpy, axis, lower, upper}]} */
export function parseUrdf(text) {
  const doc = new DOMParser().parseFromString(text, 'application/xml');
  const err = doc.querySelector('parsererror');
  if (err) throw new Error(`not XML: ${err.textContent.split('\n')[0]}`);
  const robot = doc.documentElement;
  if (robot.nodeName !== 'robot') throw new Error(`the root element is <${robot.nodeName}>, not <robot>`);
  const links = [...robot.children].filter((e) => e.nodeName === 'link').map((e) => e.getAttribute('name'));
  const joints = [];
  for (const e of [...robot.children].filter((c) => c.nodeName === 'joint')) {
    const name = e.getAttribute('name');
    const child = (tag) => [...e.children].find((c) => c.nodeName === tag);
    const origin = child('origin');
    const limit = child('limit');
    const j = {
      name,
      type: e.getAttribute('type'),
      parent: child('parent')?.getAttribute('link'),
      child: child('child')?.getAttribute('link'),
      xyz: num3(origin?.getAttribute('xyz')),
      rpy: num3(origin?.getAttribute('rpy')),
      axis: num3(child('axis')?.getAttribute('xyz'), [1, 0, 0]),
      lower: limit ? Number(limit.getAttribute('lower') ?? 0) : -Math.PI,
      upper: limit ? Number(limit.getAttribute('upper') ?? 0) : Math.PI,
    };
    if (!j.parent || !j.child) throw new Error(`joint ${name} lacks its parent or child link`);
    if (!j.xyz || !j.rpy || !j.axis) throw new Error(`joint ${name} has an origin or axis that is not three numbers`);
    if (j.type === 'continuous') { j.lower = -Math.PI; j.upper = Math.PI; }
    joints.push(j);
  }
  if (!links.length) throw new Error('the robot has no links');
  return { name: robot.getAttribute('name') || 'robot', links, joints };
}

const MOVABLE = new Set(['revolute', 'continuous', 'prismatic']);

export class UrdfRig {
  /**
   * @param {string} name the rig's name (its stream's name too)
   * @param {string} text the URDF document
   * @param {import('./stage.js').Stage} stage
   */
  constructor(name, text, stage) {
    this.name = name;
    this.kind = 'robot';
    this.text = text;
    this.stage = stage;
    this.model = parseUrdf(text);
    this.byChild = new Map(this.model.joints.map((j) => [j.child, j]));
    this.children = new Map(this.model.links.map((l) => [l, []]));
    for (const j of this.model.joints) this.children.get(j.parent)?.push(j);
    this.root = this.model.links.find((l) => !this.byChild.has(l));
    this.group = new THREE.Group();
    this.group.rotation.x = -Math.PI / 2; /* ROS z up -> screen y up */
    this.linkObj = new Map();
    this.motion = new Map();
    this.build();
    stage.scene.add(this.group);
    this.base = this.root;
    this.tips = [this.defaultTip(this.root)];
    this.joints = [];     /* answered joint values, in jointNames order */
    this.jointNames = [];
    this.limits = [];
    this.tipErrors = {};
    this.handles = [];
    this.options = { solver: 'auto', tolerance: 1e-5, timeout_ms: 20, avoid_collisions: false, collision_margin: 0.01 };
    this.withModel = true;
    this.modelError = '';
    this.collision = null; /* the chain description's "collision" */
    this.obstacles = new Obstacles(this, stage);
    this.fullPose = false;
    this.priorities = {};
  }

  /** Links below link (itself included), each with its movable joint count from link. */
  descendants(link, depth = 0, out = []) {
    out.push({ link, depth });
    for (const j of this.children.get(link) || []) this.descendants(j.child, depth + (MOVABLE.has(j.type) ? 1 : 0), out);
    return out;
  }

  /** The link farthest below base in movable joints (the last of equals, so a tool frame after the last joint). */
  defaultTip(base) {
    let best = { link: base, depth: -1 };
    for (const d of this.descendants(base)) if (d.depth >= best.depth) best = d;
    return best.link;
  }

  build() {
    const size = this.extent();
    this.radius = Math.min(0.06, Math.max(0.008, size * 0.025));
    const make = (link) => {
      const obj = new THREE.Group();
      obj.name = link;
      this.linkObj.set(link, obj);
      const kids = this.children.get(link) || [];
      obj.add(new THREE.Mesh(new THREE.SphereGeometry(this.radius * 1.25, 14, 10), materials.joint));
      for (const j of kids) {
        const origin = new THREE.Group();
        origin.position.set(...j.xyz);
        origin.quaternion.setFromEuler(new THREE.Euler(j.rpy[0], j.rpy[1], j.rpy[2], 'ZYX'));
        const motion = new THREE.Group();
        origin.add(motion);
        obj.add(origin);
        this.motion.set(j.name, { joint: j, group: motion });
        const bone = capsule(obj, new THREE.Vector3(), new THREE.Vector3(...j.xyz), this.radius, materials.linkIdle);
        if (bone) bone.userData.link = j.child;
        motion.add(make(j.child));
      }
      return obj;
    };
    this.group.add(make(this.root));
  }

  /** A rough size of the robot: the sum of its joint offsets. */
  extent() {
    let s = 0;
    for (const j of this.model.joints) s += Math.hypot(...j.xyz);
    return Math.max(s, 0.1);
  }

  /** The chain ikd registers: "urdf" for one tip, "tree" for several. */
  chain() {
    const c = this.tips.length === 1
      ? { kind: 'urdf', urdf: this.text, base: this.base, tip: this.tips[0] }
      : { kind: 'tree', urdf: this.text, base: this.base, tips: [...this.tips] };
    if (this.withModel) Object.assign(c, { collision_skeleton: this.radius, srdf: this.skeletonSrdf() });
    return c;
  }

  /** The SRDF of the skeleton model: every pair of links two joints apart
   * (grandparent and grandchild; siblings, but for a link of more than 16
   * children) disabled, as colliding by default. */
  skeletonSrdf() {
    const esc = (t) => t.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
    const pairs = [];
    for (const j of this.model.joints) {
      const up = this.byChild.get(j.parent);
      if (up) pairs.push([up.parent, j.child]);
    }
    for (const kids of this.children.values()) {
      if (kids.length > 16) continue;
      for (let a = 0; a < kids.length; a++) for (let b = a + 1; b < kids.length; b++) pairs.push([kids[a].child, kids[b].child]);
    }
    const rows = pairs.map(([a, b]) => `<disable_collisions link1="${esc(a)}" link2="${esc(b)}" reason="Default"/>`);
    return `<robot name="${esc(this.model.name)}">${rows.join('')}</robot>`;
  }

  /** Sets the base and tips (validated: every tip below the base). */
  setChain(base, tips) {
    const below = new Set(this.descendants(base).map((d) => d.link));
    const bad = tips.filter((t) => !below.has(t) || t === base);
    if (!tips.length) throw new Error('pick at least one tip');
    if (bad.length) throw new Error(`${bad.join(', ')} ${bad.length > 1 ? 'are' : 'is'} not below ${base}`);
    this.base = base;
    this.tips = [...tips];
  }

  /** After registration: the joints ikd solves, with their limits. */
  described(desc) {
    this.collision = desc.collision ?? null;
    this.obstacles.rebase();
    this.jointNames = desc.joint_names;
    this.limits = desc.joints.map((j) => [j.lower, j.upper]);
    this.joints = this.limits.map(([lo, hi]) => Math.min(hi, Math.max(lo, 0)));
    const active = new Set(this.jointNames);
    this.group.traverse((o) => {
      if (o.isMesh && o.userData.link) {
        const j = this.byChild.get(o.userData.link);
        o.userData.active = Boolean(j && active.has(j.name));
        o.material = o.userData.active ? materials.link : materials.linkIdle;
      }
    });
    /* the first target: the tip where a bent pose puts it (every other
     * joint turned by 0.35 of its range, at most 1.5 rad), well inside
     * the reach, so the first answer already moves the arm and a drag any
     * way stays reachable */
    const bent = this.limits.map(([lo, hi], i) => {
      const q = i % 2 ? Math.min(1.5, 0.35 * (hi - lo)) : 0;
      return Math.min(hi, Math.max(lo, q));
    });
    this.pose(this.jointNames, bent);
    this.makeHandles();
    this.pose(this.jointNames, this.joints);
  }

  /** Draws the links named (an answer's closest pair) in the colour of a
   * hit and the others as they were: a link's capsules are those drawn in
   * its frame, from its origin to its child joints, which is the link the
   * skeleton model gives them to. */
  markLinks(names) {
    for (const [link, obj] of this.linkObj) {
      const hit = names.includes(link);
      for (const o of obj.children) {
        if (o.isMesh && o.userData.link) o.material = hit ? materials.linkHit : o.userData.active ? materials.link : materials.linkIdle;
      }
    }
  }

  /** Puts joint values on the model (joints not named stay where they are). */
  pose(names, values) {
    names.forEach((n, i) => {
      const m = this.motion.get(n);
      if (!m) return;
      const q = values[i];
      if (m.joint.type === 'prismatic') {
        m.group.position.set(...m.joint.axis).multiplyScalar(q);
      } else if (MOVABLE.has(m.joint.type)) {
        m.group.quaternion.setFromAxisAngle(new THREE.Vector3(...m.joint.axis).normalize(), q);
      }
    });
    this.group.updateMatrixWorld(true);
  }

  /** A link's pose in the base link's frame (the page's forward kinematics). */
  tipPose(link) {
    const base = this.linkObj.get(this.base), obj = this.linkObj.get(link);
    const m = new THREE.Matrix4().copy(base.matrixWorld).invert().multiply(obj.matrixWorld);
    const p = new THREE.Vector3(), q = new THREE.Quaternion(), s = new THREE.Vector3();
    m.decompose(p, q, s);
    return { position: p, orientation: q };
  }

  makeHandles() {
    for (const h of this.handles) {
      this.stage.removeHandle(h.name);
      h.mesh.removeFromParent();
    }
    this.handles = [];
    const base = this.linkObj.get(this.base);
    for (const tip of this.tips) {
      const mesh = new THREE.Mesh(new THREE.SphereGeometry(this.radius * 1.6, 20, 14), materials.target);
      mesh.add(new THREE.AxesHelper(this.radius * 5));
      const pose = this.tipPose(tip);
      mesh.position.copy(pose.position);
      mesh.quaternion.copy(pose.orientation);
      base.add(mesh);
      const name = `${this.name}:${tip}`;
      this.stage.addHandle(name, mesh, () => this.onMove?.(), { rotatable: true });
      this.handles.push({ name, tip, mesh });
    }
    this.group.updateMatrixWorld(true);
  }

  /** The target of the handles as they are now (in the base frame). */
  target() {
    const one = (h) => {
      const t = { position: h.mesh.position.toArray() };
      if (this.fullPose) t.orientation = h.mesh.quaternion.toArray();
      return t;
    };
    if (this.tips.length === 1) return one(this.handles[0]);
    const tips = {};
    for (const h of this.handles) {
      tips[h.tip] = one(h);
      const p = this.priorities[h.tip];
      if (p) tips[h.tip].priority = p;
    }
    return { tips };
  }

  /** An answer: the joints on the model, each tip's distance from its
   * target. A failed answer (out of reach, timed out) is shown by its
   * status, and the arm stays where the last good answer put it: its joints
   * are the solver's last attempt, which the arm did not ask to jump to. */
  answered(result, target) {
    if (!result.joints || result.status !== 'success') return;
    this.joints = result.joints;
    this.pose(this.jointNames, this.joints);
    const wanted = this.tips.length === 1 ? { [this.tips[0]]: target } : target.tips;
    this.tipErrors = {};
    for (const tip of this.tips) {
      const w = wanted[tip];
      if (!w) continue;
      const got = this.tipPose(tip);
      const e = { position: got.position.distanceTo(new THREE.Vector3(...w.position)) };
      if (w.orientation) e.angle = got.orientation.angleTo(new THREE.Quaternion(...w.orientation));
      this.tipErrors[tip] = e;
    }
    this.withinLimits = this.joints.every((q, i) => q >= this.limits[i][0] - 1e-9 && q <= this.limits[i][1] + 1e-9);
  }

  /** Centre and size, to frame the camera on the rig. */
  bounds() {
    const box = new THREE.Box3().setFromObject(this.group);
    return { center: box.getCenter(new THREE.Vector3()), size: box.getSize(new THREE.Vector3()).length() };
  }

  dispose() {
    this.obstacles.dispose();
    for (const h of this.handles) this.stage.removeHandle(h.name);
    this.group.removeFromParent();
  }
}
