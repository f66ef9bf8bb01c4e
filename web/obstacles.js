/*
 * obstacles.js: a robot's collision world on the workbench: boxes, spheres
 * and capsules drawn in the view, each a handle dragged (and, but for a
 * sphere, turned) with the gizmo the targets use, and written as the
 * request's `scene` (proto/README.md, "Collisions").
 *
 * Frames: every obstacle is a child of the chain's base link, as the
 * targets are, so its local position and orientation are already in the
 * base frame and units ikd solves in (ROS: z up, metres); the rig's root
 * group turns that to the screen's y up, and nothing here converts. A box's
 * size is along its own axes; a capsule is drawn along its local y axis, so
 * its `from` and `to` are its centre minus and plus half its length along
 * that axis, turned by its orientation. When the chain's base changes the
 * obstacles stay where they are in the world (rebase).
 *
 * Nothing here talks to ikd: onChange(obstacle) tells the page that the
 * scene changed (an obstacle added, moved, resized or removed).
 */
import * as THREE from 'three';
import { materials } from './stage.js';

export const OBSTACLE_KINDS = ['box', 'sphere', 'capsule'];

export class Obstacles {
  /**
   * @param {import('./urdf_rig.js').UrdfRig} rig
   * @param {import('./stage.js').Stage} stage
   */
  constructor(rig, stage) {
    this.rig = rig;
    this.stage = stage;
    this.list = []; /* {kind, name, size | radius (and length), mesh} */
    this.count = 0;
    this.onChange = null;
  }

  /** Adds an obstacle of a kind (a size from the robot's), beside the first
   * target; returns it. */
  add(kind) {
    if (!OBSTACLE_KINDS.includes(kind)) throw new Error(`an obstacle is a ${OBSTACLE_KINDS.join(', a ')}`);
    const s = Number((this.rig.extent() * 0.1).toPrecision(2));
    const o = { kind, name: `${kind}_${++this.count}` };
    if (kind === 'box') o.size = [s, s, s];
    else if (kind === 'sphere') o.radius = s / 2;
    else Object.assign(o, { radius: s / 3, length: 2 * s });
    o.mesh = new THREE.Mesh(this.geometry(o), materials.obstacle);
    const t = this.rig.handles[0]?.mesh.position ?? new THREE.Vector3(s * 3, 0, s * 3);
    o.mesh.position.set(t.x, t.y + s * (2.5 + this.list.length), t.z);
    this.rig.linkObj.get(this.rig.base).add(o.mesh);
    o.mesh.updateMatrixWorld(true);
    this.stage.addHandle(this.handleName(o), o.mesh, () => this.onChange?.(o), { rotatable: kind !== 'sphere', behind: true });
    this.list.push(o);
    this.onChange?.(o);
    return o;
  }

  handleName(o) { return `${this.rig.name}:obstacle:${o.name}`; }

  byName(name) { return this.list.find((o) => o.name === name); }

  geometry(o) {
    if (o.kind === 'box') return new THREE.BoxGeometry(...o.size);
    if (o.kind === 'sphere') return new THREE.SphereGeometry(o.radius, 24, 16);
    return new THREE.CapsuleGeometry(o.radius, o.length, 6, 16);
  }

  /** Changes an obstacle's dimensions ({size}, {radius}, {length}); every
   * one must be a positive number, else nothing changes and this throws. */
  resize(o, dims) {
    for (const [k, v] of Object.entries(dims)) {
      for (const x of [v].flat()) if (!(Number.isFinite(x) && x > 0)) throw new Error(`${o.name}: ${k} must be more than 0`);
    }
    Object.assign(o, dims);
    o.mesh.geometry.dispose();
    o.mesh.geometry = this.geometry(o);
    this.onChange?.(o);
  }

  remove(o) {
    const i = this.list.indexOf(o);
    if (i < 0) return;
    this.list.splice(i, 1);
    this.stage.removeHandle(this.handleName(o));
    o.mesh.removeFromParent();
    o.mesh.geometry.dispose();
    this.onChange?.(o);
  }

  /** After the base changed: each obstacle under the new base link, where it was in the world. */
  rebase() {
    const base = this.rig.linkObj.get(this.rig.base);
    this.rig.group.updateMatrixWorld(true);
    for (const o of this.list) if (o.mesh.parent !== base) base.attach(o.mesh);
  }

  /** The scene as the wire writes it, in the base frame; null when empty. */
  scene() {
    if (!this.list.length) return null;
    const scene = {};
    const push = (list, x) => (scene[list] ??= []).push(x);
    for (const o of this.list) {
      const m = o.mesh;
      const position = m.position.toArray();
      if (o.kind === 'box') {
        push('boxes', { name: o.name, size: [...o.size], position, orientation: m.quaternion.toArray() });
      } else if (o.kind === 'sphere') {
        push('spheres', { name: o.name, radius: o.radius, position });
      } else {
        const half = new THREE.Vector3(0, o.length / 2, 0).applyQuaternion(m.quaternion);
        push('capsules', {
          name: o.name, radius: o.radius,
          from: m.position.clone().sub(half).toArray(), to: m.position.clone().add(half).toArray(),
        });
      }
    }
    return scene;
  }

  /** Draws the obstacle named (an answer's closest pair) in the colour of a hit, the others plain. */
  mark(name) {
    for (const o of this.list) o.mesh.material = o.name === name ? materials.obstacleHit : materials.obstacle;
  }

  dispose() {
    for (const o of [...this.list]) {
      this.stage.removeHandle(this.handleName(o));
      o.mesh.geometry.dispose();
    }
    this.list = [];
  }
}
