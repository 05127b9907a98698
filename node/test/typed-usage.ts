// Compiled by `tsc --strict` in the suite (test/types.test.mjs): the package's declarations
// accept a host's ordinary use of it, and refuse what is wrong. Not run.
import {
  SkillCache,
  SkillcacheError,
  DeclinedError,
  VerifyError,
  AbortError,
  LockFile,
  type EntryInfo,
  type SkillFile,
} from 'skillcache';
import { Client } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';

export async function host(root: string): Promise<number> {
  const cache = new SkillCache({
    root,
    keyFile: `${root}/host.key`,
    isolation: 'rehash',
    memoryTier: 1 << 20,
    maxFiles: 1024,
    maxTotalBytes: 32 << 20,
    strict: true,
    discoveryPaths: [`${root}/own-skills`],
  });
  cache.connectStdio('docs', ['skillcache', 'serve', 'samples/skills'], { stderr: 'ignore', env: { A: 'b' } });
  cache.connectHttp('web', 'http://127.0.0.1:1/mcp', { headers: { authorization: 'Bearer x' } });
  cache.connectClient('own', new Client({ name: 'host', version: '1.0.0' }));
  cache.connectClient('own-v1', new ClientV1({ name: 'host', version: '1.0.0' }));
  cache.notify('own', 'skill://a/SKILL.md');
  cache.notify('own');
  const held = await cache.cachedEntries('own');
  const inventory = await cache.inventory();
  console.log(held[0]?.scope === 'private', held[0]?.fresh, inventory.blobBytes, inventory.indexReadOnly, cache.healedIndex ?? 'none');
  let bytes = 0;
  for (const item of await cache.list('docs')) {
    if (item instanceof SkillcacheError) {
      const kind: string = item.kind;
      console.log(kind, item.message, item.causes.length);
      continue;
    }
    const info: EntryInfo = item;
    await cache.approve('docs', info.entry, info.entry.requestedTools);
    try {
      const [skill, files] = await cache.loadAll('docs', info.entry, { signal: AbortSignal.timeout(5000) });
      const file: SkillFile = await skill.read(skill.files[0]?.uri ?? skill.entry.uri);
      const b: Buffer = file.bytes;
      bytes += b.length + files.length + skill.skillMd.text.length;
      const digest: string | null = file.digest;
      console.log(digest, file.framed(), file.provenance === 'cache');
    } catch (e) {
      if (e instanceof AbortError) console.log(e.code, e.cause);
      else if (e instanceof DeclinedError) console.log(e.reason, e.changes?.added);
      else if (e instanceof VerifyError) console.log(e.uri, e.mismatch);
      else throw e;
    }
  }
  const catalog = await cache.catalog(['local-skill']);
  for (const s of catalog.skills) console.log(s.handle, s.origin, s.collidesWith);
  for (const [origin, error] of catalog.failures) console.log(origin, error.message);
  const report = await cache.verify();
  const gc = await cache.gc(1024);
  const removed: string[] = await cache.purgeAbsent(['docs']);
  const lock = new LockFile();
  console.log(report.isClean, gc.bytesAfter, removed, await cache.origins(), cache.stats()['misses'], lock.skills.length);
  return bytes + cache.forPrincipal('alice').root.length;
}

// `await using` (explicit resource management): the cache is an AsyncDisposable.
export async function scoped(root: string): Promise<void> {
  await using cache = new SkillCache({ root, keyFile: `${root}/host.key` });
  const disposable: AsyncDisposable = cache;
  void disposable;
}
