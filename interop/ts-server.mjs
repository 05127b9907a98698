// The official TypeScript SDK's skills server (@modelcontextprotocol/server 2.4.0) over stdio,
// serving every skill folder under the directory given as the first argument.
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const root = process.argv[2];
if (!root) {
  console.error('usage: node ts-server.mjs SKILLS_DIR');
  process.exit(2);
}
const server = new McpServer({ name: 'ts-skills-server', version: '2.4.0' });
const catalog = await loadSkills(root);
catalog.attach(server);
await server.connect(new StdioServerTransport());
