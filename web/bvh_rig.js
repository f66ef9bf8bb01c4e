/*
 * bvh_rig.js: a character from a BVH on the workbench: the motion plays,
 * pauses and scrubs, and its feet (and, if asked, hands) are locked where
 * they are planted, each limb solved by ikd on a stream of its own.
 *
 * Limbs: each foot and hand is found by its bone name (foot or ankle;
 * hand or wrist; left or right), and the limb is that bone with its parent
 * and grandparent (hip, knee, foot: seed 001's two-bone limb). Its chain is
 * a "skeleton" of four bones: a root standing for the hip's parent frame,
 * then hip, knee and foot with the BVH's own offsets, so a target given in
 * the hip's parent frame is the chain's target whatever the body does.
 *
 * Plants: the clip is sampled once at its frame rate; a foot is planted on
 * a frame when it is near the ground under it (within plant.height metres
 * of the 5th percentile of its heights over the clip: a first frame in
 * T-pose is no floor) and slow (horizontal speed below plant.speed, metres
 * per second); plants shorter than three frames are dropped. While
 * planted, a limb's target stays where the plant began (the frame's foot
 * position then); after a plant it blends back to the animated foot over
 * plant.blend seconds, so nothing pops. A hand is planted on speed alone.
 *
 * A frame is drawn only when its answers are in: the page poses the body
 * from the clip, sends every limb's target (and pole: the animated knee,
 * pushed forward, so the knee bends the way the motion bends it), waits
 * for the answers, and turns hip and knee onto the answered knee and foot
 * with the smallest rotation from their animated directions (seed 001's
 * bone update, done here from ikd's answered positions, which keeps the
 * motion's twist). So what is on screen is always a frame and its answers,
 * and lockErrors measures, on the drawn skeleton, each planted foot's
 * distance from its target.
 *
 * Scale: the character is sized so that it stands about 1.7 m tall (BVH
 * units vary: centimetres, inches, metres); speeds and heights above are
 * in those metres.
 */
import * as THREE from 'three';
import { BVHLoader } from 'three/addons/loaders/BVHLoader.js';
import { capsule, materials } from './stage.js';

const LIMB_NAMES = {
  left_foot: /^(l|left)[_ ]?(foot|ankle)$/i,
  right_foot: /^(r|right)[_ ]?(foot|ankle)$/i,
  left_hand: /^(l|left)[_ ]?(hand|wrist)$/i,
  right_hand: /^(r|right)[_ ]?(hand|wrist)$/i,
};

export class BvhRig {
  constructor(name, text, stage, { height = 1.7 } = {}) {
    this.name = name;
    this.kind = 'character';
    this.stage = stage;
    let bvh;
    try {
      bvh = new BVHLoader().parse(text);
    } catch (e) {
      throw new Error(`not a BVH file: ${e.message}`);
    }
    if (!bvh.skeleton.bones.length || !bvh.clip.tracks.length) throw new Error('the BVH has no bones or no motion');
    this.clip = bvh.clip;
    this.bones = bvh.skeleton.bones;
    this.root = this.bones[0];
    this.group = new THREE.Group();
    this.group.add(this.root);
    stage.scene.add(this.group);
    this.mixer = new THREE.AnimationMixer(this.root);
    this.action = this.mixer.clipAction(this.clip);
    this.action.play();
    const times = this.clip.tracks[0].times;
    this.dt = times.length > 1 ? times[1] - times[0] : 1 / 30;
    this.frames = Math.max(1, Math.round(this.clip.duration / this.dt) + 1);
    this.fps = 1 / this.dt;

    /* size: the tallest extent of the first frame is 1.7 m */
    this.setTime(0);
    const box = new THREE.Box3();
    for (const b of this.bones) box.expandByPoint(b.getWorldPosition(new THREE.Vector3()));
    const tall = Math.max(box.max.y - box.min.y, 1e-6);
    this.scale = height / tall;
    this.group.scale.setScalar(this.scale);
    /* the first frame's hips over the group's origin, feet on the floor */
    const hips = this.world(this.root);
    this.group.position.set(-hips.x * this.scale, -box.min.y * this.scale + 0.02, -hips.z * this.scale);
    this.group.updateMatrixWorld(true);

    const radius = 0.02 / this.scale;
    for (const b of this.bones) {
      for (const c of b.children) if (c.isBone) capsule(b, new THREE.Vector3(), c.position, radius, materials.bone);
    }
    this.limbs = {};
    for (const [limb, re] of Object.entries(LIMB_NAMES)) {
      const foot = this.bones.find((b) => re.test(b.name));
      const knee = foot?.parent, hip = knee?.parent, top = hip?.parent;
      if (!foot || !knee?.isBone || !hip?.isBone || !top) continue;
      for (const [a, b] of [[hip, knee], [knee, foot]]) capsule(a, new THREE.Vector3(), b.position, radius * 1.6, materials.limb);
      const target = new THREE.Mesh(new THREE.SphereGeometry(0.05, 18, 12), materials.target);
      stage.scene.add(target);
      const hand = limb.endsWith('hand');
      this.limbs[limb] = {
        name: limb, hand, bones: [hip, knee, foot], parent: top, target,
        lock: !hand, planted: [], lockAt: [], locked: null, releasedAt: -1, error: null,
      };
    }
    if (!Object.keys(this.limbs).length) throw new Error('no foot or hand bones found (names like LeftFoot, RightHand, l_ankle)');
    this.plant = { height: 0.08, speed: 0.35, blend: 0.2 };
    this.time = 0;
    this.frame = 0;
    this.playing = false;
    this.speed = 1;
    this.lockErrors = {};   /* limb -> largest planted-foot error so far, metres */
    this.lockedFrames = 0;  /* frames drawn with at least one limb locked */
    this.skate = {};        /* limb -> how far the animated foot slid during its plants, metres */
    this.detectPlants();
  }

  /** The chain of one limb (see the file's comment). */
  chain(limb) {
    const [hip, knee, foot] = this.limbs[limb].bones;
    return {
      kind: 'skeleton',
      bones: [
        { name: 'parent' },
        { name: hip.name, parent: 'parent', translation: hip.position.toArray(), rotation: hip.quaternion.toArray() },
        { name: knee.name, parent: hip.name, translation: knee.position.toArray(), rotation: knee.quaternion.toArray() },
        { name: foot.name, parent: knee.name, translation: foot.position.toArray() },
      ],
      limb: [hip.name, knee.name, foot.name],
    };
  }

  /** The clip time of frame f (the last frame just before the end, where
   * a looping clip would wrap to the first). */
  timeOf(f) { return Math.min(f * this.dt, Math.max(0, this.clip.duration - 1e-4)); }

  setTime(t) {
    this.mixer.setTime(t);
    this.group.updateMatrixWorld(true);
  }

  /** World position of a bone now. */
  world(b) { return b.getWorldPosition(new THREE.Vector3()); }

  /** A world point in the character's frame, in metres (the group's axes, unscaled). */
  local(v) { return this.group.worldToLocal(v.clone()).multiplyScalar(this.scale); }

  /** A point of the character's frame in metres -> world. */
  toWorld(v) { return this.group.localToWorld(v.clone().divideScalar(this.scale)); }

  /** Samples the clip: each limb's foot per frame, and which frames plant it. */
  detectPlants() {
    const pos = {}, hips = {};
    for (const l of Object.keys(this.limbs)) { pos[l] = []; hips[l] = []; }
    for (let f = 0; f < this.frames; f++) {
      this.setTime(this.timeOf(f));
      /* in metres, in the character's own frame (the rig may be moved later) */
      for (const [l, limb] of Object.entries(this.limbs)) {
        pos[l].push(this.local(this.world(limb.bones[2])));
        hips[l].push(this.local(this.world(limb.bones[0])));
      }
    }
    /* the ground the motion covers (its feet over the whole clip), to frame the camera on */
    this.path = new THREE.Box3();
    for (const p of Object.values(pos)) for (const v of p) this.path.expandByPoint(v);
    for (const [l, limb] of Object.entries(this.limbs)) {
      const p = pos[l];
      /* the ground under this foot: its 5th percentile height (a first
       * frame in T-pose, as many captures have, is not the floor) */
      const low = p.map((v) => v.y).sort((x, y) => x - y)[Math.floor(p.length * 0.05)];
      const planted = p.map((v, f) => {
        const a = p[Math.max(0, f - 1)], b = p[Math.min(p.length - 1, f + 1)];
        const span = (Math.min(p.length - 1, f + 1) - Math.max(0, f - 1)) * this.dt || this.dt;
        const speed = Math.hypot(b.x - a.x, b.z - a.z) / span;
        return (limb.hand || v.y - low < this.plant.height) && speed < this.plant.speed;
      });
      /* plants shorter than three frames are noise */
      for (let f = 0; f < planted.length;) {
        if (!planted[f]) { f++; continue; }
        let e = f;
        while (e < planted.length && planted[e]) e++;
        if (e - f < 3) for (let k = f; k < e; k++) planted[k] = false;
        f = e;
      }
      limb.planted = planted;
      limb.animated = p;
      /* where each plant locks: the mean of the animated foot over the
       * plant, so the lock is as far from the motion at its start as at
       * its end (half the slide each way: the leg reaches it) */
      limb.lockAt = planted.map(() => null);
      for (let f = 0; f < planted.length;) {
        if (!planted[f]) { f++; continue; }
        let e = f;
        const mean = new THREE.Vector3();
        while (e < planted.length && planted[e]) mean.add(p[e++]);
        mean.divideScalar(e - f);
        for (let k = f; k < e; k++) limb.lockAt[k] = mean;
        f = e;
      }
      /* the skating the lock removes: how far the animated foot strays from
       * its lock during plants */
      let slide = 0;
      /* a frame whose lock the leg cannot reach (farther from the hip than
       * the straight leg) is not planted: the foot is not locked there */
      const reach = (limb.bones[1].position.length() + limb.bones[2].position.length()) * this.scale * 0.995;
      planted.forEach((on, f) => {
        if (on && hips[l][f].distanceTo(limb.lockAt[f]) > reach) { planted[f] = false; limb.lockAt[f] = null; }
      });
      planted.forEach((on, f) => { if (on) slide = Math.max(slide, p[f].distanceTo(limb.lockAt[f])); });
      this.skate[l] = slide;
    }
    this.setTime(this.time || 0);
  }

  /**
   * Poses frame f from the clip and returns each limb's target and pole in
   * its parent's frame (null for a limb left to the animation), with the
   * world target kept for drawing and checking.
   */
  prepare(f) {
    this.frame = ((f % this.frames) + this.frames) % this.frames;
    this.time = this.timeOf(this.frame);
    this.setTime(this.time);
    const out = {};
    for (const [l, limb] of Object.entries(this.limbs)) {
      const [hip, knee, foot] = limb.bones;
      const anim = this.world(foot);
      const planted = limb.lock && limb.planted[this.frame];
      let goal = anim.clone();
      if (planted) {
        limb.locked = limb.lockAt[this.frame].clone();
        goal = this.toWorld(limb.locked);
        limb.releasedAt = -1;
      } else if (limb.locked) {
        if (limb.releasedAt < 0) limb.releasedAt = this.time;
        const k = Math.min(1, (this.time - limb.releasedAt) / this.plant.blend);
        if (k >= 1 || this.time < limb.releasedAt) limb.locked = null;
        else goal = this.toWorld(limb.locked).lerp(anim, k);
      }
      limb.planting = planted;
      limb.goal = goal;
      limb.target.position.copy(goal);
      limb.target.material = planted ? materials.planted : materials.target;
      limb.target.visible = limb.lock;
      if (!limb.lock) { out[l] = null; continue; }
      /* the pole: the animated knee pushed away from the hip-foot line */
      const h = this.world(hip), k = this.world(knee);
      const mid = h.clone().lerp(anim, 0.5);
      const pole = k.clone().add(k.clone().sub(mid).multiplyScalar(2));
      const local = (v) => limb.parent.worldToLocal(v.clone());
      out[l] = { target: { position: local(goal).toArray(), pole: local(pole).toArray() }, world: goal.clone() };
    }
    return out;
  }

  /**
   * An answer for limb: turn hip and knee so that the knee and foot go to
   * the answered positions (chain frame = the limb's parent frame).
   */
  answered(l, result, world) {
    const limb = this.limbs[l];
    if (!result.positions) return;
    const [hip, knee, foot] = limb.bones;
    const toWorld = (p) => limb.parent.localToWorld(new THREE.Vector3(...p));
    const [, kneeAt, footAt] = result.positions.map(toWorld);
    const turn = (bone, from, to) => {
      const o = this.world(bone);
      const a = from.clone().sub(o).normalize(), b = to.clone().sub(o).normalize();
      const dq = new THREE.Quaternion().setFromUnitVectors(a, b);
      const parentQ = bone.parent.getWorldQuaternion(new THREE.Quaternion());
      const boneQ = bone.getWorldQuaternion(new THREE.Quaternion());
      bone.quaternion.copy(parentQ.invert().multiply(dq.multiply(boneQ)));
      bone.updateMatrixWorld(true);
    };
    turn(hip, this.world(knee), kneeAt);
    turn(knee, this.world(foot), footAt);
    const drawn = this.world(foot);
    limb.error = drawn.distanceTo(world);
    if (limb.planting) this.lockErrors[l] = Math.max(this.lockErrors[l] ?? 0, limb.error);
  }

  /** Centre and size of what the motion covers, over the whole clip. */
  bounds() {
    const box = new THREE.Box3(this.toWorld(this.path.min), this.toWorld(this.path.max));
    box.expandByPoint(box.max.clone().setY(box.max.y + 1.7)); /* the body above the feet */
    return { center: box.getCenter(new THREE.Vector3()), size: box.getSize(new THREE.Vector3()).length() };
  }

  dispose() {
    for (const limb of Object.values(this.limbs)) limb.target.removeFromParent();
    this.group.removeFromParent();
  }
}
