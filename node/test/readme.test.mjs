// The READMEs' Node examples run as written in a host folder that has the package installed (as
// `npm install /path/to/node` installs a folder: a link to it), with `skillcache` on PATH and the
// clone as the working folder; and `tsc --strict` accepts them as they are.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';

import { repo, scratch, skillcacheBin } from './peers.mjs';

const here = join(repo, 'node');

/** Every ```js block of `file` that imports the package: a whole host program. */
function examples(file) {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).filter((code) => code.includes("from 'skillcache'"));
}

const all = [
  ...examples(join(repo, 'README.md')).map((code, i) => [`README.md, Node example ${i + 1}`, code]),
  ...examples(join(here, 'README.md')).map((code, i) => [`node/README.md, example ${i + 1}`, code]),
];

/** A host folder with the package (and the TS SDK client, which an example uses) installed. */
function hostFolder(t) {
  const host = scratch(t);
  writeFileSync(join(host, 'package.json'), JSON.stringify({ name: 'host', private: true, type: 'module' }));
  mkdirSync(join(host, 'node_modules', '@types'), { recursive: true });
  symlinkSync(here, join(host, 'node_modules', 'skillcache'), 'dir');
  symlinkSync(join(here, 'node_modules', '@modelcontextprotocol'), join(host, 'node_modules', '@modelcontextprotocol'), 'dir');
  symlinkSync(join(here, 'node_modules', '@types', 'node'), join(host, 'node_modules', '@types', 'node'), 'dir');
  return host;
}

test('the READMEs have Node examples', () => {
  assert.ok(all.length >= 3, all.map(([name]) => name).join(', '));
});

for (const [name, code] of all) {
  test(`${name} runs as written`, { timeout: 120_000 }, (t) => {
    const host = hostFolder(t);
    const file = join(host, 'example.mjs');
    writeFileSync(file, code);
    const tmp = scratch(t);
    const out = spawnSync(process.execPath, [file], {
      cwd: repo,
      encoding: 'utf8',
      timeout: 100_000,
      env: { ...process.env, TMPDIR: tmp, PATH: `${dirname(skillcacheBin)}${delimiter}${process.env.PATH}` },
    });
    assert.equal(out.status, 0, `${out.stdout}\n${out.stderr}`);
    assert.notEqual(out.stdout.trim(), '');
    // The examples empty their cache roots (read-only by design) with a purge and remove their
    // temporary folders: a host copying one leaves nothing behind.
    assert.deepEqual(readdirSync(tmp), [], 'the example left its temporary folder');
  });
}

test('tsc --strict accepts every README example', (t) => {
  const host = hostFolder(t);
  const files = all.map(([, code], i) => {
    const file = join(host, `example-${i}.mts`);
    writeFileSync(file, code);
    return file;
  });
  const tsc = join(here, 'node_modules', 'typescript', 'bin', 'tsc');
  const out = spawnSync(
    process.execPath,
    [tsc, '--strict', '--noEmit', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node', ...files],
    { cwd: host, encoding: 'utf8' },
  );
  assert.equal(out.status, 0, out.stdout + out.stderr);
});
