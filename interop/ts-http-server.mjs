// The official TypeScript SDK's skills server (@modelcontextprotocol/server 2.4.0) over Streamable
// HTTP on loopback, serving every skill folder under the directory given as the first argument.
// It listens on an ephemeral port and prints `listening http://127.0.0.1:PORT/mcp` once ready.
import http from 'node:http';
import { Readable } from 'node:stream';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const root = process.argv[2];
if (!root) {
  console.error('usage: node ts-http-server.mjs SKILLS_DIR');
  process.exit(2);
}
const catalog = await loadSkills(root);
const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'ts-skills-server', version: '2.4.0' });
  catalog.attach(server);
  return server;
});

// node:http to the handler's web-standard fetch(Request) -> Response, and back.
const listener = http.createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) value.forEach((v) => headers.append(name, v));
      else if (value !== undefined) headers.set(name, value);
    }
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' || body.length === 0 ? undefined : body,
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) Readable.fromWeb(response.body).pipe(res);
    else res.end();
  } catch (error) {
    console.error(error);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
listener.listen(0, '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${listener.address().port}/mcp`);
});
