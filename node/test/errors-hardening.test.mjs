// What a host's own code can do to the package's errors after it loaded: call the addon's
// error-factory registration again (it stays reachable through `require.cache`), or replace the
// built-ins the error classes use. Neither may crash the process, forge a class or a field, or
// drop one. Run in a child process, so nothing replaced here reaches the test runner.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const index = require.resolve('skillcache');

const child = `
const index = ${JSON.stringify(index)};
const sc = require(index);
const native = Object.values(require.cache).map((m) => m.exports).find((e) => e && typeof e.registerErrors === 'function');
const out = {};
try { native.registerErrors(() => new Error('forged')); out.second = 'accepted'; } catch (e) { out.second = e.message; }
Object.assign = () => ({ origin: 'other-origin', kind: 'declined' });
Object.defineProperty = (o) => o;
Object.keys = () => [];
const cache = new sc.SkillCache({ root: process.argv[1] + '/c', keyFile: process.argv[1] + '/k', approval: 'notRequired' });
cache.list('never-connected').then(() => { out.listed = true; }, (e) => {
  out.cls = e.constructor.name;
  out.notConnected = e instanceof sc.NotConnectedError;
  out.origin = e.origin;
  out.kind = e.kind;
}).finally(() => process.stdout.write(JSON.stringify(out)));
`;

test('B2: a second registration of the error factory is refused, and replaced built-ins forge no field', { timeout: 60_000 }, async (t) => {
  const dir = (await import('node:fs')).mkdtempSync((await import('node:os')).tmpdir() + '/skillcache-errors-');
  t.after(async () => (await import('node:fs')).rmSync(dir, { recursive: true, force: true }));
  const run = spawnSync(process.execPath, ['-e', child, dir], { encoding: 'utf8', timeout: 50_000 });
  assert.equal(run.status, 0, `the child process ended with ${run.status} (${run.signal}): ${run.stderr}`);
  const out = JSON.parse(run.stdout);
  assert.match(out.second, /registered once/);
  assert.equal(out.cls, 'NotConnectedError');
  assert.equal(out.notConnected, true);
  assert.equal(out.origin, 'never-connected');
  assert.equal(out.kind, 'not_connected');
});
