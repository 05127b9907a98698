// The real peers of the suite: `skillcache serve` (target/debug/skillcache, built by
// `cargo build --bin skillcache`) and the official TypeScript SDK's skills server as interop/
// pins it (`npm ci` in interop/), over stdio and Streamable HTTP; and the corpus they serve.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// The servers the suite starts inherit its stderr (as a host's do): their warnings about the
// corpus's invalid skills would fill the log, so they report errors only.
process.env.RUST_LOG ??= 'error';

const native = createRequire(import.meta.url)('../native.js');
export const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const corpus = join(repo, 'tests', 'data', 'corpus', 'skills');
export const samples = join(repo, 'samples', 'skills');
export const skillcacheBin = process.env.SKILLCACHE_BIN ?? join(repo, 'target', 'debug', 'skillcache');
const interop = join(repo, 'interop');
const proxy = join(dirname(fileURLToPath(import.meta.url)), 'proxy.mjs');

// As skillcache writes a digest: `sha256:<hex>`.
export const sha256 = (bytes) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** A scratch folder, removed when the test ends: after every cache of the process has stored
 * what its loads handed over (a cache stores a load's files behind it, and a keeper still
 * writing would fill the folder again while it is removed). */
export function scratch(t) {
  const dir = mkdtempSync(join(tmpdir(), 'skillcache-node-'));
  t.after(() => {
    native._flushAll(10_000);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

export function serveArgv(skills, dir) {
  return [skillcacheBin, 'serve', skills];
}

export function tsStdioArgv(skills) {
  return ['node', join(interop, 'ts-server.mjs'), skills];
}

/** `argv` behind the counting proxy; the requests go to `log`. */
export function counted(argv, log) {
  return { argv: ['node', proxy, ...argv], env: { SKILLCACHE_PROXY_LOG: log } };
}

/** The requests the proxy logged so far: `{ method, uri }` each. */
export function requests(log) {
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** Starts `argv`, waits for the line `pattern` matches, and kills it when the test ends. */
export async function startHttp(t, argv, pattern) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let seen = '';
  return await new Promise((resolve, reject) => {
    const look = (chunk) => {
      seen += chunk.toString('utf8');
      const m = seen.match(pattern);
      if (m) resolve(m[1]);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => reject(new Error(`${argv.join(' ')} exited (${code}) before listening:\n${seen}`)));
  });
}

/** A `Client` of the official TS SDK connected over `transport`, closed when the test ends: a
 * host's own client, for `connectClient`. */
export async function ownClient(t, transport) {
  const client = new Client({ name: 'node-host', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

/** The same with a `Client` of @modelcontextprotocol/sdk 1.x, the SDK most Node hosts run. */
export async function ownClientV1(t, transport) {
  const client = new ClientV1({ name: 'node-host', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

/** `skillcache serve` of `skills` over Streamable HTTP: its URL. */
export const serveHttp = (t, skills, dir) => startHttp(t, [...serveArgv(skills, dir), '--http', '127.0.0.1:0'], /listening on (http:\/\/\S+)\r?\n/);

/** The official TS server of `skills` over Streamable HTTP: its URL. */
export function tsHttp(t, skills) {
  return startHttp(t, ['node', join(interop, 'ts-http-server.mjs'), skills, '0'], /listening (http:\/\/\S+)\r?\n/);
}

/** The peers every load test runs against: name → a function binding `origin` in `cache`. */
export const peers = {
  'serve-stdio': async (t, cache, origin, skills, dir) => cache.connectStdio(origin, serveArgv(skills, dir)),
  'serve-http': async (t, cache, origin, skills, dir) => cache.connectHttp(origin, await serveHttp(t, skills, dir)),
  'ts-stdio': async (t, cache, origin, skills) => cache.connectStdio(origin, tsStdioArgv(skills), { stderr: 'ignore' }),
  'ts-http': async (t, cache, origin, skills) => cache.connectHttp(origin, await tsHttp(t, skills)),
  // The host's own client, connected by the host: skillcache's requests go through it.
  'client-ts-stdio': async (t, cache, origin, skills) => {
    const [command, ...args] = tsStdioArgv(skills);
    cache.connectClient(origin, await ownClient(t, new StdioClientTransport({ command, args, stderr: 'ignore' })));
  },
  'client-ts-http': async (t, cache, origin, skills) =>
    cache.connectClient(origin, await ownClient(t, new StreamableHTTPClientTransport(new URL(await tsHttp(t, skills))))),
  // The host's own client of @modelcontextprotocol/sdk 1.x, against `skillcache serve`.
  'client-sdk1-serve-stdio': async (t, cache, origin, skills, dir) => {
    const [command, ...args] = serveArgv(skills, dir);
    cache.connectClient(origin, await ownClientV1(t, new StdioClientTransportV1({ command, args, stderr: 'ignore' })));
  },
  'client-sdk1-serve-http': async (t, cache, origin, skills, dir) =>
    cache.connectClient(origin, await ownClientV1(t, new StreamableHTTPClientTransportV1(new URL(await serveHttp(t, skills, dir))))),
};

/** The bytes on disk of each file of `entry`, by URI (the skill's folder is its root). */
export function filesOnDisk(skills, entry) {
  const root = entry.uri.slice(0, -'SKILL.md'.length);
  const folder = join(skills, root.slice('skill://'.length));
  return new Map(entry.files.map((f) => [f.uri, readFileSync(join(folder, f.uri.slice(root.length)))]));
}

/** Each interface of reports.d.ts with the names of its members. */
export function declared() {
  const text = readFileSync(join(repo, 'node', 'reports.d.ts'), 'utf8');
  const out = {};
  for (const [, name, body] of text.matchAll(/export interface (\w+) \{([\s\S]*?)\n\}/g)) {
    out[name] = [...body.matchAll(/^ {2}(\w+):/gm)].map((m) => m[1]).sort();
  }
  return out;
}

export const keys = (o) => Object.keys(o).sort();
