// The official TypeScript SDK's skills server (@modelcontextprotocol/server 2.4.0) over
// Streamable HTTP, serving every skill folder under SKILLS_DIR on 127.0.0.1:PORT (0: any free
// port). Prints `listening http://127.0.0.1:<port>/mcp` once it accepts connections.
// Usage: node ts-http-server.mjs SKILLS_DIR [PORT]
import http from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const [root, port = '0'] = process.argv.slice(2);
if (!root) {
  console.error('usage: node ts-http-server.mjs SKILLS_DIR [PORT]');
  process.exit(2);
}
const catalog = await loadSkills(root);
const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'ts-skills-server', version: '2.4.0' });
  catalog.attach(server);
  return server;
});

// Node's request/response in, web-standard Request/Response to the SDK's handler.
const server = http.createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: hasBody ? Buffer.concat(chunks) : undefined,
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const c of response.body) res.write(c);
    }
    res.end();
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
});
server.listen(Number(port), '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${server.address().port}/mcp`);
});
