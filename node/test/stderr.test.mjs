// A server's stderr reaches the host's stderr by default and with `stderr: 'inherit'`: Node marks
// its own descriptor 2 close-on-exec, so a server that only inherited it would start with none
// and its complaints (a skills folder not found, say) would vanish. Run in a child whose stderr
// the test reads.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));

for (const [name, options] of [['by default', ''], ["with stderr: 'inherit'", ", { stderr: 'inherit' }"]]) {
  test(`B7: the server's stderr is shown ${name}`, { timeout: 60_000 }, () => {
    const server = JSON.stringify([process.execPath, '-e', "process.stderr.write('the server says: no skills here\\n'); process.exit(1)"]);
    const host = `
      import { mkdtempSync } from 'node:fs';
      import { tmpdir } from 'node:os';
      import { join } from 'node:path';
      import { SkillCache } from 'skillcache';
      const dir = mkdtempSync(join(tmpdir(), 'skillcache-stderr-'));
      const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key') });
      cache.connectStdio('docs', ${server}${options});
      await cache.list('docs').catch(() => {});
    `;
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', host], { cwd: here, encoding: 'utf8', timeout: 50_000 });
    assert.match(out.stderr, /the server says: no skills here/);
  });
}
