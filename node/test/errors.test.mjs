// B5, B2: every error kind and decline reason of the shared table (skillcache-binding) has its
// class here and its name in the types; a server's own text never becomes `message`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const native = require('../native.js');
const errors = require('../errors.js');
const { SkillCache, ServerError, SkillcacheError } = require('../index.js');
const dts = readFileSync(new URL('../errors.d.ts', import.meta.url), 'utf8');

/** The quoted names of the union type of `field` in `errors.d.ts`'s class `cls`. */
function union(cls, field) {
  const body = dts.slice(dts.indexOf(`class ${cls} `));
  const line = body.match(new RegExp(`readonly ${field}: ([^;]+);`));
  assert.ok(line, `${cls}.${field} is not typed`);
  return new Set([...line[1].matchAll(/'([a-z_]+)'/g)].map((m) => m[1]));
}

test('B5: every error kind, class and decline reason the table has is mapped here', () => {
  const table = native.errorKinds();
  assert.ok(table.kinds.length > 20);
  for (const [cls, kind] of table.kinds) {
    assert.ok(errors[cls]?.prototype instanceof errors.SkillcacheError, `${cls} (${kind}) has no class`);
  }
  for (const [cls, parent] of table.classes) {
    const base = parent === null ? errors.SkillcacheError : errors[parent];
    assert.ok(errors[cls]?.prototype instanceof base, `${cls} does not extend ${parent}`);
  }
  const reasons = union('DeclinedError', 'reason');
  for (const r of table.declineReasons) assert.ok(reasons.has(r), `DeclinedError.reason lacks '${r}'`);
  const missing = union('OfflineError', 'missing');
  for (const m of table.offlineMisses) assert.ok(missing.has(m), `OfflineError.missing lacks '${m}'`);
  const mismatches = union('VerifyError', 'mismatch');
  for (const m of table.mismatches) assert.ok(mismatches.has(m), `VerifyError.mismatch lacks '${m}'`);
});

test("B2: a server's text is serverMessage, bounded and inert; message is the library's, naming the origin", { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skillcache-errors-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cache = new SkillCache({ root: join(dir, 'root'), keyFile: join(dir, 'host.key') });
  const hostile = '\x1b]0;pwned\x07\n'.repeat(100_000);
  const client = {
    async request() {
      const e = new Error(hostile);
      e.code = -32602;
      throw e;
    },
  };
  cache.connectClient('hostile', client);
  await assert.rejects(cache.entry('hostile', 'skill://notes/SKILL.md'), (e) => {
    assert.ok(e instanceof ServerError && e instanceof SkillcacheError, `${e.name}`);
    assert.ok(e.message.startsWith('skills/get of skill://notes/SKILL.md to origin hostile failed on the server: '), e.message.slice(0, 200));
    assert.equal(e.uri, 'skill://notes/SKILL.md');
    // eslint-disable-next-line no-control-regex
    assert.ok(!/[\u0000-\u001f\u007f-\u009f]/.test(e.message), 'a control character in message');
    // eslint-disable-next-line no-control-regex
    assert.ok(!/[\u0000-\u001f\u007f-\u009f]/.test(e.serverMessage), 'a control character in serverMessage');
    assert.ok(e.serverMessage.length < 8 * 1024, `${e.serverMessage.length} characters`);
    assert.ok(e.message.length < 8 * 1024, `${e.message.length} characters`);
    assert.equal(e.code, -32602);
    return true;
  });
});

test('B5: a refused option is a ConfigError naming the option as JS spells it', () => {
  assert.throws(() => new SkillCache({ approval: 'not_required' }), (e) => {
    assert.ok(e instanceof errors.ConfigError, e.name);
    assert.equal(e.message, 'approval must be one of "required", "notRequired", not "not_required"');
    return true;
  });
  assert.throws(() => new SkillCache({ originQuota: -1 }), errors.ConfigError);
  assert.throws(() => new SkillCache({ maxFiles: 1.5 }), /maxFiles must be a whole number/);
});

test('B2: every field of the shared report is an own property of every error, null where its kind has none', () => {
  // The report's field names, read from its source (`.with("name", …)`), in camelCase.
  const report = readFileSync(new URL('../../binding/src/report.rs', import.meta.url), 'utf8');
  const names = new Set([...report.matchAll(/\.with\(\s*"([a-z_]+)"/g)].map((m) => m[1].replace(/_([a-z])/g, (_, c) => c.toUpperCase())));
  assert.ok(names.size > 30, `${names.size} field names read`);
  for (const name of names) assert.ok(errors.FIELDS.includes(name), `errors.js's FIELDS lacks ${name}`);
  const e = errors.make('NotConnectedError', 'origin x is not connected', { kind: 'not_connected', origin: 'x', causes: [] });
  for (const name of errors.FIELDS) assert.ok(Object.hasOwn(e, name), `${name} is not an own property`);
  assert.equal(e.origin, 'x');
  assert.equal(e.uri, null);
});

test('an uncaught error shows the fields its kind has, not null for every other, and a stack from the caller', async () => {
  const { inspect } = await import('node:util');
  const e = errors.make('NotConnectedError', 'origin x is not connected', { kind: 'not_connected', origin: 'x', uri: null, causes: [] });
  const shown = inspect(e);
  assert.match(shown, /origin: 'x'/);
  assert.match(shown, /kind: 'not_connected'/);
  assert.doesNotMatch(shown, /null/, shown);
  // The first frame is this test, not the package's constructors.
  const frames = e.stack.split('\n').filter((l) => l.trimStart().startsWith('at '));
  assert.ok(frames.length > 0, e.stack);
  assert.doesNotMatch(frames[0], /errors\.js/, e.stack);
  // Still every field, own: a getter on Error.prototype answers none of them.
  assert.ok(Object.hasOwn(e, 'uri') && e.uri === null);
});
