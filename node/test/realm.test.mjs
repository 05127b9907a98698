// Code in the host's process may redefine any built-in, before the package loads or after. It can
// change what it sees, but it must not reach a file's verified bytes, another holder's copy, or
// what the next read returns: the bytes stay in the addon, every copy handed out is an
// ArrayBuffer of its own, every array and object the addon hands over is built with define
// semantics (no index setter on `Array.prototype` is called), and a `then` on every object, a
// byte stream, `transfer()` or a worker that takes a copy spoils nothing else. Run in a child
// (realm-child.mjs): the hooks would disturb the test runner itself.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const child = join(dirname(fileURLToPath(import.meta.url)), 'realm-child.mjs');

for (const [name, memoryTier] of [['memory tier', 64 << 20], ['disk', 0]]) {
  for (const when of ['before', 'after']) {
    test(`B1: built-ins redefined ${when} load reach no file's own bytes (${name})`, { timeout: 120_000 }, () => {
      const out = JSON.parse(execFileSync(process.execPath, [child, String(memoryTier), when], { encoding: 'utf8', timeout: 100_000 }).trim().split('\n').at(-1));
      assert.ok(out.files > 20, `${out.files} files read`);
      assert.deepEqual(out.wrong, [], 'every file keeps its verified bytes, text and frame');
      assert.equal(out.shared, false, 'no two copies share an ArrayBuffer');
      assert.deepEqual(out.whole, [], 'every array the package returned has all its elements');
      assert.equal(out.setterCalls, 0, 'no index setter on Array.prototype was handed a file, its bytes or a handle');
      assert.equal(out.externals, 0, 'no hook was shown a handle of the addon');
      // Every value a Promise of the package settles with has a `then` of its own (undefined), so
      // a `then` on `Object.prototype` is never consulted (captured.test.mjs: a forging one).
      assert.equal(out.thenSeen, 0, 'no Promise of the package consulted the then getter');
      assert.equal(out.streamDetached, true, 'the byte stream took its copy (and that copy alone)');
      assert.equal(out.forgedIsPackageFile, false);
    });
  }
}
