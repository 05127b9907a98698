// The official TypeScript SDK 2.4.0 `SkillsClient` (@modelcontextprotocol/client) sweeping a
// server over Streamable HTTP: list every skill, then read and verify every file of each (a
// skill's files concurrently). The whole process is what scripts/ts-compare.sh measures; it
// prints `skills=N files=M bytes=B ms=T`. Usage: node ts-sweep.mjs URL
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';

const url = process.argv[2];
const start = performance.now();
const client = new Client({ name: 'ts-sweep', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const skills = new SkillsClient(client, { skipInvalid: true });
const listing = await skills.list();
let files = 0;
let bytes = 0;
for (const skill of listing.skills) {
  const listed = Array.isArray(skill.resources) ? skill.resources : [];
  const read = await Promise.all(listed.map((r) => skills.read(skill, r.uri)));
  for (const f of read) {
    if (!f.verified) throw new Error(`unverified: ${f.uri}`);
    files += 1;
    bytes += f.bytes.length;
  }
}
const ms = performance.now() - start;
console.log(`skills=${listing.skills.length} files=${files} bytes=${bytes} ms=${ms.toFixed(1)}`);
await client.close();
