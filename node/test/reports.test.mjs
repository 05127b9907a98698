// The maintenance reports are the library's own serialization (one shape for the CLI's `--json`,
// the Python package and this one), with camelCase keys: reports.d.ts must declare exactly the
// keys the calls settle with, so a field the library adds or renames fails here, not in a host's
// type-checked code.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

import { SkillCache } from 'skillcache';
import { declared, keys, samples, scratch, serveArgv } from './peers.mjs';

test('every report settles with exactly the keys reports.d.ts declares', { timeout: 60_000 }, async (t) => {
  const dir = scratch(t);
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired' });
  cache.connectStdio('docs', serveArgv(samples, dir), { stderr: 'ignore' });
  const { entry } = await cache.entry('docs', 'skill://release-notes/SKILL.md');
  await cache.loadAll('docs', entry);
  const types = declared();
  assert.deepEqual(
    Object.keys(types).sort(),
    ['BlobRef', 'CachedEntry', 'DynamicSkill', 'FileDrift', 'GcReport', 'Inventory', 'LockCheck', 'LockDrift', 'Pin', 'VerifyReport'],
  );

  const verify = await cache.verify();
  assert.deepEqual(keys(verify), types.VerifyReport);
  assert.equal(verify.isClean, true);
  assert.equal(verify.checked > 0, true, 'a loaded skill has blobs to check');
  assert.deepEqual(keys(await cache.gc()), types.GcReport);
  const inventory = await cache.inventory();
  assert.deepEqual(keys(inventory), types.Inventory);
  assert.equal(inventory.origins, 1);
  const [held] = await cache.cachedEntries();
  assert.deepEqual(keys(held), types.CachedEntry);
  assert.deepEqual([held.origin, held.uri, held.scope, held.dynamic], ['docs', entry.uri, 'public', false]);
  await cache.purge('docs');
});

test('a corrupt blob is reported as an origin and a digest', { timeout: 60_000 }, async (t) => {
  const dir = scratch(t);
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired' });
  cache.connectStdio('docs', serveArgv(samples, dir), { stderr: 'ignore' });
  const { entry } = await cache.entry('docs', 'skill://release-notes/SKILL.md');
  const [, files] = await cache.loadAll('docs', entry);
  await cache.flush(); // the files reach the store behind the load
  // The blob of SKILL.md (origins/<origin>/sha256/<2 hex>/<62 hex>), one byte changed in place:
  // the test runs as root or as the files' owner, so the store's read-only mode is lifted first.
  const hex = files[0].digest.slice('sha256:'.length);
  const blob = join(dir, 'cache', 'origins', 'docs', 'sha256', hex.slice(0, 2), hex.slice(2));
  const bytes = readFileSync(blob);
  bytes[0] ^= 1;
  chmodSync(dirname(blob), 0o700);
  chmodSync(blob, 0o600);
  writeFileSync(blob, bytes);
  const report = await cache.verify();
  assert.equal(report.isClean, false);
  assert.deepEqual(report.corrupt, [{ origin: 'docs', digest: files[0].digest }]);
  assert.deepEqual(keys(report.corrupt[0]), declared().BlobRef);
  await cache.purge('docs');
});

test('Symbol.asyncDispose (`await using`) leaves every loaded file in the store', { timeout: 60_000 }, async (t) => {
  const dir = scratch(t);
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired' });
  cache.connectStdio('docs', serveArgv(samples, dir), { stderr: 'ignore' });
  const { entry } = await cache.entry('docs', 'skill://release-notes/SKILL.md');
  const [, files] = await cache.loadAll('docs', entry);
  // What `await using` calls on the way out of its scope (Node 20 has the symbol, not the syntax).
  assert.equal(typeof cache[Symbol.asyncDispose], 'function');
  await cache[Symbol.asyncDispose]();
  for (const f of files) {
    const hex = f.digest.slice('sha256:'.length);
    assert.equal(readFileSync(join(dir, 'cache', 'origins', 'docs', 'sha256', hex.slice(0, 2), hex.slice(2))).length, f.size);
  }
  assert.equal((await cache.inventory()).blobs, files.length);
});
