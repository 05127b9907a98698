// Promise hooks and a patched `AbortSignal`, after load, against the path from the addon's answer
// to what a call settles with (hooks-child.mjs, in a process of its own: the hooks would reach
// the test runner too). Each case broke the package before it settled through pairs and froze
// what it settles with.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const child = join(dirname(fileURLToPath(import.meta.url)), 'hooks-child.mjs');

test('B1: Promise hooks and a patched AbortSignal after load change no answer and crash nothing', { timeout: 120_000 }, () => {
  const run = execFileSync(process.execPath, [child], { encoding: 'utf8', timeout: 100_000 });
  const out = JSON.parse(run.trim().split('\n').at(-1));
  assert.deepEqual(out.wrong, []);
});
