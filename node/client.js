'use strict';
// The JS half of `SkillCache.connectClient` (src/client.rs): skillcache's requests sent through
// the host's own connected `Client` of the official TypeScript SDK: @modelcontextprotocol/client
// (2.x) or @modelcontextprotocol/sdk (1.x).
// Nothing here looks into an answer: the `result` object goes back as JSON text, which the addon
// size-checks before it parses it, so every field reaches skillcache's own validation as the
// server sent it.

// Built-ins taken at load: what runs on an answer must not be one a host redefined later (a
// `JSON.stringify` that rewrote a result would make its entry and its bytes agree on a forgery).
const { apply } = Reflect;
const { parse, stringify } = JSON;
const { isInteger } = Number;
const StringOf = String;
const ErrorOf = Error;
const MapOf = Map;
const AbortControllerOf = AbortController;
const TypeErrorOf = TypeError;
const { get: mapGet, set: mapSet, delete: mapDelete } = Map.prototype;
const setHas = Set.prototype.has;
const lastly = Promise.prototype.finally;
const abortOf = AbortController.prototype.abort;
const signalOf = Object.getOwnPropertyDescriptor(AbortController.prototype, 'signal').get;

// A result schema that takes any result as it is: `Client.request` with a schema sends a method
// the SDK does not type (skills/list, skills/get) and checks nothing. 2.x reads a Standard Schema
// (v1, `~standard`); 1.x calls a Zod 3 schema's `safeParse` (it has no `_zod`, so 1.x takes it
// for Zod 3).
const asSent = Object.freeze({
  '~standard': Object.freeze({ version: 1, vendor: 'skillcache', validate: (value) => ({ value }) }),
  safeParse: (data) => ({ success: true, data }),
  safeParseAsync: async (data) => ({ success: true, data }),
});

// 1.x makes its own failures McpErrors with a JSON-RPC code, as it makes a server's error
// response: a closed connection (-32000) and a timeout or an abort (-32001), by its ErrorCode. They
// are failures of the client, not refusals of the server.
const SDK1_LOCAL = new Set([-32000, -32001]);

// The SDK's own per-request timeout, at its largest (a timer's limit): the cache's request
// deadline governs, and a request the cache abandons is aborted through its signal.
const LONGEST = 2 ** 31 - 1;

/** `client`'s requester, for the addon: `(id, method, params)` sends one request and settles
 * with the result as JSON text, or `{ code, message }` (a JSON-RPC error) or `{ failed }`; it
 * never rejects. `(id, null, null)` aborts request `id`. */
function requester(client) {
  if (typeof client?.request !== 'function') {
    throw new TypeErrorOf('connectClient needs a connected Client of @modelcontextprotocol/client or @modelcontextprotocol/sdk');
  }
  const pending = new MapOf();
  return function call(id, method, params) {
    if (method === null) {
      const controller = apply(mapGet, pending, [id]);
      if (controller !== undefined) apply(abortOf, controller, []);
      apply(mapDelete, pending, [id]);
      return undefined;
    }
    const controller = new AbortControllerOf();
    apply(mapSet, pending, [id, controller]);
    return apply(lastly, ask(client, method, params, apply(signalOf, controller, [])), [() => apply(mapDelete, pending, [id])]);
  };
}

async function ask(client, method, params, signal) {
  try {
    const result = await client.request({ method, params: parse(params) }, asSent, { signal, timeout: LONGEST });
    return stringify(result);
  } catch (error) {
    // The SDK's ProtocolError (an error response from the server) has a numeric JSON-RPC code;
    // its own errors (SdkError: a closed connection, a timeout) and an abort do not.
    const local = error?.name === 'McpError' && apply(setHas, SDK1_LOCAL, [error.code]);
    if (isInteger(error?.code) && !local) return { code: error.code, message: StringOf(error.message) };
    return { failed: error instanceof ErrorOf ? `${error.name}: ${error.message}` : StringOf(error) };
  }
}

module.exports = { requester };
