// A small MCP server on the official TypeScript SDK's server package
// (`@modelcontextprotocol/server` 2.4.0, pinned in interop/package-lock.json and
// installed by `npm ci` in interop/), for tests/interop_typescript.rs.
//
//   node interop/typescript/server.mjs stdio
//   node interop/typescript/server.mjs http PORT     # http://127.0.0.1:PORT/mcp
//
// Dual-era with the SDK's defaults: `serveStdio` (legacy: 'serve') answers
// `server/discover` and also serves a connection that opens with `initialize`;
// `createMcpHandler` (legacy: 'stateless') serves 2026-07-28 requests and answers each
// legacy request with a fresh instance (no `Mcp-Session-Id`; GET and DELETE get 405).
//
// Tools, as in interop/python/server.py and examples/rmcp_server.rs:
//   echo {text}      -> the text
//   add {a, b}       -> "a + b = sum", plus structured content {sum}
//   slow {ms}        -> sleeps ms milliseconds (stops early when the call is cancelled)
//   steps {count, ms} -> `count` steps `ms` apart, each reported with
//                       notifications/progress (progress i, total count, "step i") when
//                       the call carries a progress token, through the handler's
//                       `notify` (on HTTP: the request's own response stream)
//
// Resources, a template, prompts and completions, as in interop/python/server.py and
// server_legacy.py (the shared checks are in tests/support/interop.rs):
//   demo://greeting  text/plain, a fixed text
//   demo://pixel     image/png, the 8-byte PNG signature (a blob)
//   demo://item/{id} text/plain, "item <id>"; `id` completes by prefix
//   greet {name}     a user message "Hello, <name>!"; `name` completes by prefix
//   hello            a user message "Hello!"
//
// Change events on demand (tests/interop_typescript.rs subscribes, then calls these):
//   touch {uri}      -> notifications/resources/updated for `uri`
//   change {list}    -> notifications/<list>/list_changed, `list` one of tools, prompts,
//                       resources (the lists themselves stay as they are)
// They use the SDK's own API: on stdio the pinned instance's `sendToolListChanged()` /
// `server.sendResourceUpdated()` (in 2026-07-28 the entry routes them onto the open
// `subscriptions/listen` streams; in a legacy connection they go out as they are); on
// HTTP, where each request gets a fresh instance, the handler's `notify` (its event bus
// feeds the listen streams). `resources.subscribe` is declared, so a listen's
// `resourceSubscriptions` is honoured; a legacy connection subscribes with
// `resources/subscribe` (handlers below), and `touch` reports only a URI it subscribed
// to. (Legacy HTTP is stateless, one instance per request and no GET stream: nothing
// reaches a legacy client there.)
//
// HTTP is plain node:http bound to 127.0.0.1 only, bridged to the handler's fetch face
// by the small adapter below (the SDK's own Node adapter is a separate package).

import { createServer } from 'node:http';
import { Readable } from 'node:stream';

import { McpServer, ResourceTemplate, completable, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const NAME = 'smthrs-interop-typescript';
const VERSION = '2.4.0';

const GREETING = 'Hello from the interop server.';
const PIXEL = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const ITEM_IDS = ['apple', 'apricot', 'banana'];
const NAMES = ['Alice', 'Alicia', 'Bob'];
const byPrefix = (choices) => (value) => choices.filter((choice) => choice.startsWith(value));

const LISTS = ['tools', 'prompts', 'resources'];

/**
 * One server instance; both entries call this factory per connection / request, in
 * the era the connection or request speaks. `notifier(server)` is how the instance
 * reports a change (see the header).
 */
function makeServer(notifier, era) {
  const server = new McpServer(
    { name: NAME, version: VERSION },
    { capabilities: { tools: {}, resources: { subscribe: true } } },
  );
  const notify = notifier(server);
  // Legacy: the URIs this connection subscribed to (2026-07-28: the listen filters).
  const subscribed = era === 'legacy' ? new Set() : undefined;
  if (subscribed) {
    server.server.setRequestHandler('resources/subscribe', async ({ params }) => {
      subscribed.add(params.uri);
      return {};
    });
    server.server.setRequestHandler('resources/unsubscribe', async ({ params }) => {
      subscribed.delete(params.uri);
      return {};
    });
  }
  server.registerTool(
    'echo',
    { description: 'Returns the text unchanged', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers; the sum also comes back as structured content',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      outputSchema: z.object({ sum: z.number() }),
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: `${a} + ${b} = ${a + b}` }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool(
    'slow',
    {
      description: 'Sleeps for `ms` milliseconds, then says so',
      inputSchema: z.object({ ms: z.number().int().min(0) }),
    },
    async ({ ms }, ctx) => {
      const signal = ctx?.mcpReq?.signal;
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
    },
  );
  server.registerTool(
    'steps',
    {
      description: 'Runs `count` steps `ms` apart, reporting progress after each',
      inputSchema: z.object({ count: z.number().int().min(0), ms: z.number().int().min(0) }),
    },
    async ({ count, ms }, ctx) => {
      const progressToken = ctx?.mcpReq?._meta?.progressToken;
      for (let i = 1; i <= count; i++) {
        await new Promise((resolve) => setTimeout(resolve, ms));
        if (progressToken !== undefined) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress: i, total: count, message: `step ${i}` },
          });
        }
      }
      return { content: [{ type: 'text', text: `did ${count} steps` }] };
    },
  );
  server.registerTool(
    'touch',
    {
      description: 'Reports the resource at `uri` as updated (notifications/resources/updated)',
      inputSchema: z.object({ uri: z.string() }),
    },
    async ({ uri }) => {
      if (!subscribed || subscribed.has(uri)) await notify.resourceUpdated(uri);
      return { content: [{ type: 'text', text: `touched ${uri}` }] };
    },
  );
  server.registerTool(
    'change',
    {
      description: 'Reports a list as changed (notifications/<list>/list_changed)',
      inputSchema: z.object({ list: z.enum(LISTS) }),
    },
    async ({ list }) => {
      await notify[`${list}Changed`]();
      return { content: [{ type: 'text', text: `changed ${list}` }] };
    },
  );
  server.registerResource(
    'greeting',
    'demo://greeting',
    { description: 'A fixed text.', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: GREETING }] }),
  );
  server.registerResource(
    'pixel',
    'demo://pixel',
    { description: 'A few binary bytes.', mimeType: 'image/png' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'image/png', blob: PIXEL.toString('base64') }],
    }),
  );
  server.registerResource(
    'item',
    new ResourceTemplate('demo://item/{id}', { list: undefined, complete: { id: byPrefix(ITEM_IDS) } }),
    { description: 'One item by id.', mimeType: 'text/plain' },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${id}` }] }),
  );
  server.registerPrompt(
    'greet',
    {
      description: 'Greets someone by name.',
      argsSchema: z.object({ name: completable(z.string(), byPrefix(NAMES)) }),
    },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }] }),
  );
  server.registerPrompt('hello', { description: 'A greeting without arguments.' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'Hello!' } }],
  }));
  return server;
}

/** node:http request -> web Request (body streamed; aborted when the client goes away). */
function toWebRequest(req, res, port) {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) value.forEach((v) => headers.append(key, v));
    else if (value !== undefined) headers.set(key, value);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(`http://127.0.0.1:${port}${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? Readable.toWeb(req) : undefined,
    duplex: hasBody ? 'half' : undefined,
    signal: abort.signal,
  });
}

/** web Response -> node:http response, streaming the body (SSE) as it comes. */
async function writeWebResponse(response, res) {
  const headers = {};
  response.headers.forEach((value, key) => {
    headers[key] = value;
  });
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.on('close', () => reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away, or the handler aborted the stream
  }
  res.end();
}

/** stdio: the pinned instance sends; the entry routes onto the listen streams. */
const instanceNotifier = (server) => ({
  toolsChanged: () => server.sendToolListChanged(),
  promptsChanged: () => server.sendPromptListChanged(),
  resourcesChanged: () => server.sendResourceListChanged(),
  resourceUpdated: (uri) => server.server.sendResourceUpdated({ uri }),
});

async function serveHttp(port) {
  // The handler's `notify` publishes on its event bus (the factory runs per request,
  // once `handler` exists).
  const handler = createMcpHandler(({ era }) => makeServer(() => handler.notify, era), {
    onerror: (error) => console.error(`${NAME}: ${error.message}`),
  });
  const http = createServer(async (req, res) => {
    try {
      const response = await handler.fetch(toWebRequest(req, res, port));
      await writeWebResponse(response, res);
    } catch (error) {
      console.error(`${NAME}: ${error?.stack ?? error}`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end();
    }
  });
  http.listen(port, '127.0.0.1', () => {
    console.error(`${NAME}: listening on http://127.0.0.1:${port}/mcp`);
  });
}

const [mode, port] = process.argv.slice(2);
if (mode === 'stdio') {
  serveStdio(({ era }) => makeServer(instanceNotifier, era), {
    onerror: (error) => console.error(`${NAME}: ${error.message}`),
  });
} else if (mode === 'http' && /^\d+$/.test(port ?? '')) {
  await serveHttp(Number(port));
} else {
  console.error('usage: server.mjs stdio | http PORT');
  process.exit(2);
}
