// The package's declarations (index.d.ts: napi-rs's native.d.ts and errors.d.ts) accepted by
// `tsc --strict` for a host's ordinary use (test/typed-usage.ts), and a wrong option refused.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';


const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const tsc = join(here, '..', 'node_modules', 'typescript', 'bin', 'tsc');

test('tsc --strict accepts a typed host', () => {
  const out = spawnSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stdout + out.stderr);
});

test('tsc --strict refuses an unknown isolation mode', (t) => {
  const file = join(here, `.wrong-${process.pid}.ts`);
  writeFileSync(file, "import { SkillCache } from 'skillcache';\nnew SkillCache({ isolation: 'bogus' });\n");
  t.after(() => spawnSync('rm', ['-f', file]));
  const out = spawnSync(
    process.execPath,
    [tsc, '--strict', '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node', file],
    { encoding: 'utf8', cwd: join(here, '..') },
  );
  assert.notEqual(out.status, 0);
  assert.match(out.stdout, /TS2322/);
});
