// `checkLock`: the gate `skillcache lock --check` is, from a Node host. A lock made from a server's
// listing is clean; after the server's folder changes, every difference is named with its data
// (the file, its pinned and listed digest and size; a skill added), and a pinned origin with no
// server is drift, never a rejection.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { SkillCache, LockFile, SkillcacheError } from 'skillcache';
import { declared, keys, scratch, serveArgv, sha256 } from './peers.mjs';

const NOTES = 'skill://notes/SKILL.md';

function write(root, files) {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
}

function open(dir, skills, name) {
  const cache = new SkillCache({ root: join(dir, name, 'root'), keyFile: join(dir, name, 'host.key') });
  cache.connectStdio('docs', serveArgv(skills, dir));
  return cache;
}

test('checkLock names each changed file and each origin it could not list', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const skills = join(dir, 'skills');
  write(skills, {
    'notes/SKILL.md': '---\nname: notes\ndescription: Takes notes.\n---\nSee refs/a.md.\n',
    'notes/refs/a.md': 'pinned bytes\n',
  });
  const first = open(dir, skills, 'first');
  const lock = new LockFile();
  for (const info of await first.list('docs')) {
    assert.ok(!(info instanceof SkillcacheError), String(info));
    lock.insert('docs', info.entry);
  }
  const clean = await first.checkLock(lock);
  assert.deepEqual(
    { isClean: clean.isClean, pinned: clean.pinned, matched: clean.matched, drift: clean.drift },
    { isClean: true, pinned: 1, matched: 1, drift: [] },
  );

  write(skills, {
    'notes/refs/a.md': 'changed\n',
    'extra/SKILL.md': '---\nname: extra\ndescription: Added later.\n---\n',
  });
  const second = open(dir, skills, 'second');
  lock.insert('gone', (await second.entry('docs', NOTES)).entry);
  const check = await second.checkLock(lock);
  assert.equal(check.isClean, false);
  const kinds = check.drift.map((d) => [d.kind, d.origin, d.skill]).sort();
  assert.deepEqual(kinds, [
    ['added', 'docs', 'skill://extra/SKILL.md'],
    ['files', 'docs', NOTES],
    ['unlisted', 'gone', null],
  ]);
  const files = check.drift.find((d) => d.kind === 'files');
  assert.deepEqual(files.files, [
    {
      uri: 'skill://notes/refs/a.md',
      pinned: { digest: sha256('pinned bytes\n'), size: 13 },
      now: { digest: sha256('changed\n'), size: 8 },
    },
  ]);
  assert.match(files.message, /skill:\/\/notes\/refs\/a\.md changed/);
  assert.match(check.drift.find((d) => d.kind === 'unlisted').message, /origin gone/);
  // The shapes reports.d.ts declares (the library's serialization, in camelCase).
  const types = declared();
  assert.deepEqual(keys(check), types.LockCheck);
  for (const d of check.drift) assert.deepEqual(keys(d), types.LockDrift);
  assert.deepEqual(keys(files.files[0]), types.FileDrift);
  assert.deepEqual(keys(files.files[0].pinned), types.Pin);
});
