// A stdio pass-through that counts: starts the server named by its arguments, relays its stdin
// and stdout unchanged, and appends the method (and `uri`, if any) of every request the client
// sends to the file in SKILLCACHE_PROXY_LOG, one JSON line each. The tests read it to say how
// many requests skillcache made, and of what.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const log = process.env.SKILLCACHE_PROXY_LOG;
const [program, ...args] = process.argv.slice(2);
const child = spawn(program, args, { stdio: ['pipe', 'inherit', 'inherit'] });
let pending = '';
process.stdin.on('data', (chunk) => {
  child.stdin.write(chunk);
  pending += chunk.toString('utf8');
  let newline;
  while ((newline = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    try {
      const message = JSON.parse(line);
      if (message.method && message.id !== undefined) {
        appendFileSync(log, JSON.stringify({ method: message.method, uri: message.params?.uri ?? null }) + '\n');
      }
    } catch {
      // Not JSON: relayed all the same, not counted.
    }
  }
});
process.stdin.on('end', () => child.stdin.end());
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
