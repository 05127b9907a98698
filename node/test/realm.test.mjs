// Code in the host's process may redefine any built-in after the package loaded. It can change
// what it sees, but it must not reach another holder's file, or memory no file was given: the
// pool a hit's bytes are copied into is never shown to a redefined built-in, every file read
// while they are redefined keeps its verified bytes, and requiring the package's module by its
// path gives no maker of the package's files; and a `then` defined on arrays, which every
// Promise settling with one adopts, spoils nothing read before or after it. Run in a child (realm-child.mjs): the hooks
// would disturb the test runner itself.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const child = join(dirname(fileURLToPath(import.meta.url)), 'realm-child.mjs');

for (const [name, memoryTier] of [['memory tier', 64 << 20], ['disk', 0]]) {
  test(`J3: built-ins redefined after load reach no file's own bytes (${name})`, { timeout: 120_000 }, () => {
    const out = JSON.parse(execFileSync(process.execPath, [child, String(memoryTier)], { encoding: 'utf8', timeout: 100_000 }).trim().split('\n').at(-1));
    assert.ok(out.files > 20, `${out.files} files read`);
    assert.deepEqual(out.wrong, []);
    assert.equal(out.reached, 0, 'no pool a file keeps its bytes in was shown to a hook');
    assert.equal(out.forgedIsPackageFile, false);
    assert.ok(out.adopted > 0, 'the thenable was handed what reads settled with');
    assert.deepEqual(out.spoiled, [], 'nothing read before or after it is spoiled');
  });
}
