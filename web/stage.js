/*
 * stage.js: the workbench's 3D stage (three.js): renderer, camera and
 * floor, the materials and the capsule every rig is drawn with, and the way
 * a handle is dragged.
 *
 * Dragging: a press on a handle (a target sphere) picks it and drags it in
 * the plane through it that faces the camera (the view plane), so a handle
 * follows the pointer and never leaps in depth. The axis gizmo (three.js's
 * TransformControls) is there for the other cases, switched on per handle:
 * "axes" moves along one axis or plane, "rotate" turns a full-pose target.
 * The camera orbits about its target but never below the floor (polar
 * angle capped, target kept above y = 0).
 *
 * Nothing here talks to ikd; the rigs (urdf_rig.js, bvh_rig.js) own their
 * handles and are told when one moved.
 */
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { TransformControls } from 'three/addons/controls/TransformControls.js';

export const UP = new THREE.Vector3(0, 1, 0);

export const materials = {
  bone: new THREE.MeshStandardMaterial({ color: 0xc8ccd4, roughness: 0.6 }),
  limb: new THREE.MeshStandardMaterial({ color: 0xf0a040, roughness: 0.5 }),
  link: new THREE.MeshStandardMaterial({ color: 0xe87d2c, roughness: 0.45, metalness: 0.2 }),
  linkIdle: new THREE.MeshStandardMaterial({ color: 0x8a8f99, roughness: 0.6 }),
  linkHit: new THREE.MeshStandardMaterial({ color: 0xff5a4f, emissive: 0x401010, roughness: 0.5 }),
  joint: new THREE.MeshStandardMaterial({ color: 0x3a3f4b, roughness: 0.5 }),
  target: new THREE.MeshStandardMaterial({ color: 0xff8c1a, emissive: 0x552200 }),
  planted: new THREE.MeshStandardMaterial({ color: 0x4ad66d, emissive: 0x0d3a18 }),
  pole: new THREE.MeshStandardMaterial({ color: 0x4aa3ff, emissive: 0x10264a }),
  obstacle: new THREE.MeshStandardMaterial({ color: 0x6f8fb8, roughness: 0.7, transparent: true, opacity: 0.55 }),
  obstacleHit: new THREE.MeshStandardMaterial({ color: 0xff5a4f, emissive: 0x401010, transparent: true, opacity: 0.7 }),
};

/** A capsule (cylinder with round ends) from a to b in parent's coordinates. */
export function capsule(parent, a, b, radius, mat) {
  const d = new THREE.Vector3().subVectors(b, a);
  const len = d.length();
  if (len < 1e-9) return null;
  const m = new THREE.Mesh(new THREE.CapsuleGeometry(radius, Math.max(len - 2 * radius, 1e-6), 4, 10), mat);
  m.position.copy(a).addScaledVector(d, 0.5);
  m.quaternion.setFromUnitVectors(UP, d.normalize());
  parent.add(m);
  return m;
}

export class Stage {
  constructor(container) {
    this.container = container;
    this.webgl = true;
    try {
      this.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
      this.renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
      this.dom = this.renderer.domElement;
    } catch (e) {
      this.webgl = false;
      this.renderer = null;
      this.dom = document.createElement('div');
    }
    this.dom.classList.add('stage');
    container.appendChild(this.dom);
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0x1d2027);
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.05, 100);
    this.camera.position.set(0.8, 1.7, 4.6);
    this.orbit = new OrbitControls(this.camera, this.dom);
    this.orbit.target.set(0.6, 0.8, 0);
    this.orbit.maxPolarAngle = Math.PI / 2 - 0.03; /* never under the floor */
    this.orbit.minDistance = 0.3;
    this.orbit.maxDistance = 30;
    this.orbit.addEventListener('change', () => {
      if (this.orbit.target.y < 0) this.orbit.target.y = 0;
      this.redraw();
    });
    this.orbit.update();
    this.scene.add(new THREE.HemisphereLight(0xdde6ff, 0x30281e, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 2.0);
    sun.position.set(2, 4, 3);
    this.scene.add(sun);
    this.scene.add(new THREE.GridHelper(10, 40, 0x4a5263, 0x2e3440));

    this.handles = new Map(); /* name -> {mesh, onMove(mesh), rotatable} */
    this.gizmo = new TransformControls(this.camera, this.dom);
    this.gizmo.setSize(0.8);
    this.scene.add(this.gizmo.getHelper());
    this.gizmo.addEventListener('dragging-changed', (e) => { this.orbit.enabled = !e.value; });
    this.gizmo.addEventListener('change', () => this.redraw());
    this.gizmo.addEventListener('objectChange', () => this.moved(this.gizmo.object));
    this.mode = 'plane'; /* plane | axes | rotate */
    this.selected = null;
    this.dragging = null;
    this.ray = new THREE.Raycaster();
    this.plane = new THREE.Plane();
    this.grab = new THREE.Vector3();
    this.dom.addEventListener('pointerdown', (e) => this.down(e));
    this.dom.addEventListener('pointermove', (e) => this.move(e));
    window.addEventListener('pointerup', () => this.up());
    this.listeners = new Set();

    this.dirty = true;
    this.resize();
    window.addEventListener('resize', () => this.resize());
  }

  resize() {
    const w = this.container.clientWidth || window.innerWidth;
    const h = this.container.clientHeight || window.innerHeight;
    this.camera.aspect = w / h;
    /* on a phone the panel is a sheet over the lower part: what the camera
     * looks at is drawn at a third of the height instead of the middle */
    if (w <= 700) this.camera.setViewOffset(w, h, 0, h / 6, w, h);
    else this.camera.clearViewOffset();
    this.camera.updateProjectionMatrix();
    if (this.renderer) this.renderer.setSize(w, h);
    this.redraw();
  }

  redraw() { this.dirty = true; }

  render() {
    if (this.renderer && this.dirty) {
      this.dirty = false;
      this.renderer.render(this.scene, this.camera);
    }
  }

  /** Looks at a point from where the camera is now, at a distance (farther
   * on a tall, narrow screen, whose horizontal view is narrower). */
  frame(center, distance) {
    if (this.camera.aspect < 1) distance /= Math.pow(this.camera.aspect, 0.8);
    const dir = new THREE.Vector3().subVectors(this.camera.position, this.orbit.target).normalize();
    this.orbit.target.copy(center);
    this.camera.position.copy(center).addScaledVector(dir, distance);
    this.orbit.update();
  }

  /* ---- handles --------------------------------------------------------- */

  /** Registers a draggable mesh; onMove(mesh) runs after every move. A
   * handle "behind" (an obstacle) is picked only where no other handle is
   * under the pointer, so that a target inside an obstacle stays draggable. */
  addHandle(name, mesh, onMove, { rotatable = false, behind = false } = {}) {
    mesh.name = name;
    this.handles.set(name, { mesh, onMove, rotatable, behind });
  }

  removeHandle(name) {
    const h = this.handles.get(name);
    if (!h) return;
    if (this.gizmo.object === h.mesh) this.gizmo.detach();
    if (this.selected === name) this.selected = null;
    this.handles.delete(name);
  }

  /** Calls fn(name) when the selection changes. */
  onSelect(fn) { this.listeners.add(fn); }

  select(name) {
    const h = this.handles.get(name);
    if (!h) return false;
    this.selected = name;
    this.attachGizmo();
    for (const fn of this.listeners) fn(name);
    this.redraw();
    return true;
  }

  setMode(mode) {
    this.mode = mode;
    this.attachGizmo();
    this.redraw();
  }

  attachGizmo() {
    const h = this.selected && this.handles.get(this.selected);
    if (!h || this.mode === 'plane' || (this.mode === 'rotate' && !h.rotatable)) {
      this.gizmo.detach();
      return;
    }
    this.gizmo.attach(h.mesh);
    this.gizmo.setMode(this.mode === 'rotate' ? 'rotate' : 'translate');
    this.gizmo.setSpace(this.mode === 'rotate' ? 'local' : 'world');
  }

  moved(mesh) {
    const h = mesh && this.handles.get(mesh.name);
    if (h) h.onMove(mesh);
    this.redraw();
  }

  pointer(e) {
    const r = this.dom.getBoundingClientRect();
    this.ray.setFromCamera(new THREE.Vector2(((e.clientX - r.left) / r.width) * 2 - 1, -((e.clientY - r.top) / r.height) * 2 + 1), this.camera);
  }

  down(e) {
    if (this.gizmo.axis !== null || this.gizmo.dragging) return;
    this.pointer(e);
    const meshes = [...this.handles.values()].map((h) => h.mesh).filter((m) => m.visible);
    const hits = this.ray.intersectObjects(meshes, false);
    const hit = hits.find((x) => !this.handles.get(x.object.name).behind) ?? hits[0];
    if (!hit) return;
    this.select(hit.object.name);
    if (this.mode !== 'plane') return;
    /* the view plane through the handle: it moves across the screen and
     * keeps its depth */
    const p = hit.object.getWorldPosition(new THREE.Vector3());
    this.plane.setFromNormalAndCoplanarPoint(this.camera.getWorldDirection(new THREE.Vector3()), p);
    const at = this.ray.ray.intersectPlane(this.plane, new THREE.Vector3());
    this.grab.subVectors(p, at || p);
    this.dragging = hit.object;
    this.orbit.enabled = false;
    this.dom.setPointerCapture?.(e.pointerId);
  }

  move(e) {
    if (!this.dragging) return;
    this.pointer(e);
    const at = this.ray.ray.intersectPlane(this.plane, new THREE.Vector3());
    if (!at) return;
    const world = at.add(this.grab);
    const m = this.dragging;
    m.position.copy(m.parent ? m.parent.worldToLocal(world) : world);
    m.updateMatrixWorld();
    this.moved(m);
  }

  up() {
    if (!this.dragging) return;
    this.dragging = null;
    this.orbit.enabled = true;
  }

  /** Where a handle is on screen, in CSS pixels of the page. */
  screenOf(name) {
    const h = this.handles.get(name);
    if (!h) return null;
    const p = h.mesh.getWorldPosition(new THREE.Vector3()).project(this.camera);
    const r = this.dom.getBoundingClientRect();
    return { x: r.left + ((p.x + 1) / 2) * r.width, y: r.top + ((1 - p.y) / 2) * r.height };
  }
}
