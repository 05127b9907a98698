// What the package takes at load stays what it uses: a host's dependency that later writes over
// the package's own modules' exports (the error factory, the addon's `Aborter`) or defines a
// `then` on `Object.prototype` (which every Promise resolved with an object consults) changes
// no answer of the package. Run in a child (captured-child.mjs): the `then` would disturb the
// test runner itself.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { scratch, skillcacheBin } from './peers.mjs';

const child = join(dirname(fileURLToPath(import.meta.url)), 'captured-child.mjs');

test('B1, B2: exports written over after load and a then on Object.prototype forge no answer', { timeout: 120_000 }, (t) => {
  const dir = scratch(t);
  const run = execFileSync(process.execPath, [child, dir, skillcacheBin], { encoding: 'utf8', timeout: 100_000 });
  const out = JSON.parse(run.trim().split('\n').at(-1));
  assert.equal(out.errorsFrozen, true, "errors.js's exports are frozen");
  assert.equal(out.forgedAborter, false, 'the Aborter taken at load was used');
  assert.deepEqual(out.wrong, [], 'every call answered with the package’s own values');
  assert.equal(out.forgedThen, 0, 'no Promise of the package consulted the forged then');
});
