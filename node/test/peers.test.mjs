// Every skill of the corpus, through each real peer: listed, approved, loaded, every file
// verified and equal to the bytes on disk; then again from a fresh handle on the same root,
// every byte from the cache.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join } from 'node:path';

import { SkillCache, SkillcacheError, EntryInfo } from 'skillcache';
import { corpus, filesOnDisk, peers, scratch, sha256 } from './peers.mjs';

async function loadEverySkillAndCompare(cache, origin) {
  const listing = await cache.list(origin);
  const refused = listing.filter((item) => item instanceof SkillcacheError);
  assert.deepEqual(refused, []);
  const entries = listing.map((item) => {
    assert.ok(item instanceof EntryInfo);
    return item.entry;
  });
  assert.ok(entries.length > 20, `the corpus has ${entries.length} skills`);
  const read = [];
  for (const entry of entries) {
    await cache.approve(origin, entry);
    assert.equal(await cache.isApproved(origin, entry), true);
    const [skill, files] = await cache.loadAll(origin, entry);
    const disk = filesOnDisk(corpus, entry);
    assert.ok(skill.skillMd.verified);
    assert.deepEqual(skill.skillMd.bytes, disk.get(entry.uri));
    assert.deepEqual(files.map((f) => f.uri), entry.files.map((f) => f.uri));
    for (const f of files) {
      assert.ok(f.bytes.equals(disk.get(f.uri)), f.uri);
      assert.equal(f.digest, sha256(disk.get(f.uri)), f.uri);
      assert.ok(f.verified);
      assert.equal(f.origin, origin);
    }
    read.push(...files);
  }
  return { entries, read };
}

for (const [name, connect] of Object.entries(peers)) {
  test(`every corpus skill loads verified byte for byte from ${name}, then from the cache`, { timeout: 600_000 }, async (t) => {
    const dir = scratch(t);
    const open = () => new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key') });
    const cold = open();
    await connect(t, cold, 'peer', corpus, dir);
    const first = await loadEverySkillAndCompare(cold, 'peer');
    assert.ok(first.read.every((f) => f.provenance === 'server' || f.provenance === 'cache'));
    // The first cache stores its files behind its loads: a second cache on the root finds them
    // once it has (another cache cannot see what is on its way).
    await cold.flush();

    const warm = open();
    await connect(t, warm, 'peer', corpus, dir);
    const again = await loadEverySkillAndCompare(warm, 'peer');
    assert.ok(again.read.every((f) => f.provenance === 'cache'));
    const stats = warm.stats();
    assert.equal(stats.misses, 0);
    assert.ok(stats.hits_hashed + stats.hits_evidence >= again.read.length);
    const report = await warm.verify();
    assert.ok(report.isClean);
  });
}
