// Reads made at the edge of the stack, when each would be paced to the next turn: a throw on the
// way (the stack's limit) fails that call alone, and every later read still settles
// (stack-edge-child.mjs, in a process of its own).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const child = join(dirname(fileURLToPath(import.meta.url)), 'stack-edge-child.mjs');

test('B1: a read at the stack limit never leaves later paced reads unsettled', { timeout: 180_000 }, () => {
  const run = execFileSync(process.execPath, [child], { encoding: 'utf8', timeout: 170_000 });
  const out = JSON.parse(run.trim().split('\n').at(-1));
  assert.deepEqual(out, { stuck: null, healthy: true });
});
