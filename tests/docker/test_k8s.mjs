/**
 * test_k8s.mjs: the Kubernetes manifests of docker/k8s/, checked without a
 * cluster (kubectl cannot validate offline).
 *
 * - every document is validated against the Kubernetes API's own schemas
 *   (the kubernetes-models npm package, pinned in package-lock.json, whose
 *   validators are generated from the API's OpenAPI definitions); a wrong
 *   type or a missing required member fails (unknown members are not: the
 *   API's schemas allow them, only a server's strict field validation
 *   refuses them);
 * - the manifests are checked against the daemon itself: the container port
 *   is the one the image's ikd listens on (Dockerfile), the probe paths are
 *   answered 200 by a real ikd started with a token (without sending it),
 *   every IKD_* variable is one `ikd --help` names, the user is the image's,
 *   the grace period covers the preStop delay plus ikd's drain deadline,
 *   the Service, HPA, PDB and Ingress select and name what the Deployment
 *   defines, and the security context is non-root, read-only, without
 *   privilege escalation;
 * - the fleet's files: the Pods share their registry through the Redis of
 *   redis.yaml (IKD_REDIS names its Service and port, a URL ikd accepts;
 *   the StatefulSet keeps its data on a volume, append-only, with an LRU
 *   maxmemory policy), the Ingress asks no affinity (no upstream-hash-by,
 *   which sends every request without the header to one Pod), and the
 *   NetworkPolicies let only the ingress controller and Prometheus reach
 *   ikd's port, and only ikd reach Redis.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';
import { start, IKD_BIN } from '../clients/ikd_daemon.mjs';

const DIR = 'docker/k8s';
const docs = [];
for (const f of readdirSync(DIR).filter((n) => n.endsWith('.yaml')).sort()) {
  for (const d of parseAllDocuments(readFileSync(`${DIR}/${f}`, 'utf8'))) {
    assert.equal(d.errors.length, 0, `${f}: ${d.errors}`);
    docs.push({ file: f, obj: d.toJS() });
  }
}
const byKind = (k) => docs.filter((d) => d.obj.kind === k).map((d) => d.obj);
const named = (k, name) => byKind(k).find((o) => o.metadata.name === name);

test('every manifest is valid against the Kubernetes API schemas', async () => {
  assert.ok(docs.length >= 5, 'expected Deployment, Service, HPA, PDB and Ingress');
  for (const { file, obj } of docs) {
    const path = `kubernetes-models/${obj.apiVersion}/${obj.kind}`;
    const mod = await import(path).catch((e) => assert.fail(`${file}: no schema for ${obj.apiVersion} ${obj.kind}: ${e.message}`));
    const Model = mod[obj.kind] ?? mod.default;
    assert.doesNotThrow(() => new Model(obj).validate(), `${file} (${obj.kind}) is not valid`);
  }
  for (const k of ['Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Ingress', 'StatefulSet']) {
    assert.equal(byKind(k).length, 1, `one ${k}`);
  }
  assert.ok(named('Service', 'ikd') && named('Service', 'ikd-redis'), 'the Services of ikd and of Redis');
  assert.ok(named('NetworkPolicy', 'ikd') && named('NetworkPolicy', 'ikd-redis'), 'the NetworkPolicies');
});

test('the validation can fail: a wrong type and a missing required member are refused', async () => {
  const { Deployment } = await import('kubernetes-models/apps/v1/Deployment');
  const bad = structuredClone(byKind('Deployment')[0]);
  bad.spec.replicas = 'three';
  assert.throws(() => new Deployment(bad).validate());
  const missing = structuredClone(byKind('Deployment')[0]);
  delete missing.spec.template.spec.containers[0].name;
  assert.throws(() => new Deployment(missing).validate());
});

test('ports, probes, variables, user and timings agree with the daemon and the image', async () => {
  const dep = byKind('Deployment')[0];
  const pod = dep.spec.template.spec;
  const c = pod.containers[0];
  const dockerfile = readFileSync('Dockerfile', 'utf8');
  const listen = /^ENV IKD_LISTEN=0\.0\.0\.0:(\d+)$/m.exec(dockerfile);
  assert.ok(listen, 'the Dockerfile names the port ikd listens on');
  const http = c.ports.find((p) => p.name === 'http');
  assert.equal(http.containerPort, Number(listen[1]));
  const uid = /useradd[^\n]*--uid (\d+)/.exec(dockerfile);
  assert.equal(pod.securityContext.runAsUser, Number(uid[1]));
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);

  const help = execFileSync(IKD_BIN, ['--help'], { encoding: 'utf8' });
  for (const e of c.env) assert.ok(help.includes(e.name), `ikd --help does not name ${e.name}`);
  assert.ok(c.env.some((e) => e.name === 'IKD_TOKEN' && e.valueFrom?.secretKeyRef), 'the token comes from a Secret');
  const threads = Number(c.env.find((e) => e.name === 'IKD_THREADS').value);
  assert.equal(Number(c.resources.requests.cpu), threads, 'one solver thread per requested core');
  const loops = Number(c.env.find((e) => e.name === 'IKD_LOOPS').value);
  assert.equal(Number(c.resources.requests.cpu), loops, 'one event loop per requested core (ikd counts the node\'s cores otherwise)');

  const drain = Number(c.env.find((e) => e.name === 'IKD_DRAIN_TIMEOUT').value);
  const pre = c.lifecycle.preStop.exec.command;
  assert.equal(pre[0], 'sleep');
  assert.ok(pod.terminationGracePeriodSeconds > Number(pre[1]) + drain,
    'the grace period must cover the preStop delay and the drain deadline');

  // the probes, against a real ikd with a token (kubelet sends none)
  const d = await start(['--token', 'k8s-test-token', '--log-level', 'warn']);
  try {
    for (const probe of [c.readinessProbe, c.livenessProbe]) {
      assert.equal(probe.httpGet.port, 'http');
      const r = await fetch(`${d.base}${probe.httpGet.path}`);
      assert.equal(r.status, 200, `${probe.httpGet.path} without a token`);
    }
    const m = await fetch(`${d.base}/metrics`);
    assert.equal(m.status, 401, 'the control: /metrics does need the token');
  } finally {
    assert.equal(await d.stop(), 0);
  }

  const labels = dep.spec.template.metadata.labels;
  assert.deepEqual(dep.spec.selector.matchLabels, labels);
  const svc = named('Service', 'ikd');
  assert.deepEqual(svc.spec.selector, labels);
  assert.equal(svc.spec.ports[0].targetPort, 'http');
  assert.deepEqual(byKind('PodDisruptionBudget')[0].spec.selector.matchLabels, labels);
  const hpa = byKind('HorizontalPodAutoscaler')[0];
  assert.equal(hpa.spec.scaleTargetRef.name, dep.metadata.name);
  assert.ok(hpa.spec.minReplicas >= 2, 'at least two replicas so that one can drain');
  const ing = byKind('Ingress')[0];
  const backend = ing.spec.rules[0].http.paths[0].backend.service;
  assert.equal(backend.name, svc.metadata.name);
  assert.equal(backend.port.name, svc.spec.ports[0].name);
  assert.ok(ing.spec.tls?.length, 'TLS at the ingress');
  assert.equal(ing.metadata.annotations['nginx.ingress.kubernetes.io/upstream-hash-by'], undefined,
    'no affinity: a request without the header would always reach one Pod');
});

test('the Pods share their registry through Redis, reachable by ikd only', () => {
  const dep = byKind('Deployment')[0];
  const c = dep.spec.template.spec.containers[0];
  const url = c.env.find((e) => e.name === 'IKD_REDIS')?.value;
  assert.ok(url, 'the Deployment names Redis');
  const m = /^redis:\/\/([a-z0-9-]+):(\d+)$/.exec(url);
  assert.ok(m, `IKD_REDIS is a redis:// URL of a Service: ${url}`);
  // ikd itself accepts the URL (and refuses a bad one: the control)
  const ok = execFileSync(IKD_BIN, ['--redis', url, '--help'], { encoding: 'utf8' });
  assert.ok(ok.includes('--redis'));
  assert.throws(() => execFileSync(IKD_BIN, ['--redis', 'rediss://x', '--listen', '127.0.0.1:1'], { stdio: 'pipe' }));
  const rsvc = named('Service', m[1]);
  assert.ok(rsvc, `no Service ${m[1]}`);
  assert.equal(rsvc.spec.ports[0].port, Number(m[2]));
  const sts = byKind('StatefulSet')[0];
  assert.equal(sts.spec.serviceName, rsvc.metadata.name);
  assert.deepEqual(rsvc.spec.selector, sts.spec.template.metadata.labels);
  const rc = sts.spec.template.spec.containers[0];
  assert.equal(rc.ports.find((p) => p.name === rsvc.spec.ports[0].targetPort).containerPort, 6379);
  const args = rc.args.join(' ');
  assert.match(args, /--appendonly yes/, 'the registry outlives a restart of Redis');
  assert.match(args, /--maxmemory-policy allkeys-lru/, 'Redis evicts by its own policy');
  assert.ok(sts.spec.volumeClaimTemplates?.length && rc.volumeMounts.some((v) => v.mountPath === '/data'));
  assert.equal(rc.securityContext.readOnlyRootFilesystem, true);

  const ikdLabels = dep.spec.template.metadata.labels;
  const np = named('NetworkPolicy', 'ikd');
  assert.deepEqual(np.spec.podSelector.matchLabels, ikdLabels);
  assert.deepEqual(np.spec.policyTypes, ['Ingress']);
  assert.equal(np.spec.ingress.length, 1);
  const from = np.spec.ingress[0].from;
  assert.ok(from.length >= 1 && from.every((f) => f.namespaceSelector && f.podSelector),
    'every peer is a selected namespace and Pod, never the whole cluster');
  assert.ok(from.some((f) => f.namespaceSelector.matchLabels['kubernetes.io/metadata.name'] === 'ingress-nginx'));
  assert.deepEqual(np.spec.ingress[0].ports.map((p) => p.port), ['http']);
  const rnp = named('NetworkPolicy', 'ikd-redis');
  assert.deepEqual(rnp.spec.podSelector.matchLabels, sts.spec.template.metadata.labels);
  assert.deepEqual(rnp.spec.ingress[0].from, [{ podSelector: { matchLabels: ikdLabels } }]);
});
