'use strict';
// The JS half of `SkillCache.connectClient` (src/client.rs): skillcache's requests sent through
// the host's own connected `Client` of the official TypeScript SDK: @modelcontextprotocol/client
// (2.x) or @modelcontextprotocol/sdk (1.x).
// Nothing here looks into an answer: the `result` object goes back as JSON text, which the addon
// size-checks before it parses it, so every field reaches skillcache's own validation as the
// server sent it.

// Built-ins taken at load: what runs on an answer must not be one a host redefined later (a
// `JSON.stringify` that rewrote a result would make its entry and its bytes agree on a forgery).
// What was replaced before the package loaded cannot be told apart from the built-in, and it was
// replaced for the SDK too, which reads every message of the server with the realm's
// `JSON.parse`: through `connectClient` the host's realm is the transport, as the pipe or the
// socket is for `connectStdio` and `connectHttp` (docs/reliability.md says where that ends).
const { apply, defineProperty } = Reflect;
const { parse, stringify } = JSON;
const { keys: ownKeys } = Object;
const { isArray } = Array;
const then = Promise.prototype.then;
// A brand check: `instanceof` would ask `Promise[Symbol.hasInstance]`, which a host may define.
const { isPromise } = require('node:util').types;
const ownDescriptor = Object.getOwnPropertyDescriptor;
const { isInteger } = Number;
const MapOf = Map;
const AbortControllerOf = AbortController;
const TypeErrorOf = TypeError;
const { get: mapGet, set: mapSet, delete: mapDelete } = Map.prototype;
const setHas = Set.prototype.has;
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

/** `client`'s requester, for the addon, as a factory: the addon calls it once with its settle
 * function, a native function `(id, outcome)` that only this closure ever holds, and gets the
 * requester `(id, method, params)`, which sends one request and settles it by calling `settle`
 * with the result as JSON text, or `{ code, message }` (a JSON-RPC error) or `{ failed }`.
 * `(id, null, null)` aborts request `id`. No Promise passes between the two: a Promise the
 * package made and the addon waited on could be given its own `then` by a Promise hook
 * (`v8.promiseHooks`, `async_hooks`) that sees every Promise at its birth, and answer for it. */
function requester(client) {
  if (typeof client?.request !== 'function') {
    throw new TypeErrorOf('connectClient needs a connected Client of @modelcontextprotocol/client or @modelcontextprotocol/sdk');
  }
  const pending = new MapOf();
  return function connect(settle) {
    return function call(id, method, params) {
      // Never throws: the addon calls this from its queue, where a throw would be uncaught.
      try {
        if (method === null) {
          const controller = apply(mapGet, pending, [id]);
          if (controller !== undefined) apply(abortOf, controller, []);
          apply(mapDelete, pending, [id]);
          return;
        }
        const controller = new AbortControllerOf();
        apply(mapSet, pending, [id, controller]);
        ask(client, method, params, apply(signalOf, controller, []), (outcome) => {
          apply(mapDelete, pending, [id]);
          settle(id, outcome);
        });
      } catch (error) {
        settle(id, failure(error));
      }
    };
  };
}

/** Sends one request through the host's client and calls `settle` once with its outcome. Only
 * the host's client runs here, and the built-ins taken at load: the client's Promise gets its
 * two reactions with the built-in `then`, which the engine calls with what it really settled
 * with (a `then` of the Promise's own, or a species a host defined, cannot answer for it; a
 * species that throws is a failure of the request); the result becomes JSON by `json`, which no
 * `toJSON` a host defined on `Object.prototype` can rewrite. */
function ask(client, method, params, signal, settle) {
  let settled = false;
  const once = (outcome) => {
    if (settled) return;
    settled = true;
    settle(outcome);
  };
  const onValue = (result) => {
    let text;
    try {
      text = json(result);
    } catch (error) {
      once(failure(error));
      return;
    }
    once(text === undefined ? { __proto__: null, failed: 'the client answered with no result' } : text);
  };
  const onError = (error) => once(failure(error));
  let sent;
  try {
    sent = client.request({ method, params: parse(params) }, asSent, { signal, timeout: LONGEST });
    if (sent === null || (typeof sent !== 'object' && typeof sent !== 'function')) {
      onValue(sent);
    } else if (isPromise(sent)) {
      // Best effort: with an own `constructor` that is `undefined`, `then` makes its own Promise
      // with the built-in `Promise` and runs nothing of the host's. Where that fails (a hook made
      // the Promise non-extensible) the host's species runs, and can only throw.
      defineProperty(sent, 'constructor', { __proto__: null, value: undefined });
      apply(then, sent, [onValue, onError]);
    } else {
      // A client that answers with a thenable of its own: its `then` is the client's.
      sent.then(onValue, onError);
    }
  } catch (error) {
    once(failure(error));
  }
}

/** `value[key]` if `value` has it as an own data property: the SDK sets `code` and `message` on
 * each error it makes, and one inherited (a host's getter on `Object.prototype` or
 * `Error.prototype`) is none of the client's. */
function own(value, key) {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return undefined;
  const d = ownDescriptor(value, key);
  return d !== undefined && 'value' in d ? d.value : undefined;
}

/** How a request failed, as the addon reads it: an object with no prototype, so resolving the
 * request's Promise with it looks up no `then` a host defined on `Object.prototype`, and the
 * addon reads its own fields only. */
function failure(error) {
  try {
    // The SDK's ProtocolError (an error response from the server) has a numeric JSON-RPC code;
    // its own errors (SdkError: a closed connection, a timeout) and an abort do not. Every field
    // read is the error's own: the SDKs set `code`, `message` and `name` on each error they make,
    // and one inherited (a getter a host defined on `Error.prototype`) is none of the client's.
    const code = own(error, 'code');
    const message = own(error, 'message');
    const name = own(error, 'name');
    if (isInteger(code) && !(name === 'McpError' && apply(setHas, SDK1_LOCAL, [code]))) {
      return { __proto__: null, code, message: typeof message === 'string' ? message : '' };
    }
    let failed;
    if (typeof message === 'string') failed = `${typeof name === 'string' ? name : 'Error'}: ${message}`;
    else if (typeof error === 'string') failed = error;
    else failed = 'the client failed without saying why';
    return { __proto__: null, failed };
  } catch {
    // A getter of the error's own that throws: still an outcome.
    return { __proto__: null, failed: 'the client failed, and its error could not be read' };
  }
}

/** `value` as JSON text, as `JSON.stringify` writes it, except that no `toJSON` is called: a host's
 * `Object.prototype.toJSON` would rewrite every result (an entry and its bytes agreeing on a
 * forgery). Own enumerable keys of objects, arrays by index; strings, numbers and booleans by the
 * built-in (a primitive has no `toJSON` looked up). `undefined` for what JSON has no form of. */
function json(value) {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return stringify(value);
    case 'object':
      break;
    default:
      return undefined;
  }
  if (isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i += 1) {
      const item = json(value[i]);
      out += `${i === 0 ? '' : ','}${item === undefined ? 'null' : item}`;
    }
    return `${out}]`;
  }
  const names = ownKeys(value);
  let out = '{';
  let first = true;
  for (let i = 0; i < names.length; i += 1) {
    const item = json(value[names[i]]);
    if (item === undefined) continue;
    out += `${first ? '' : ','}${stringify(names[i])}:${item}`;
    first = false;
  }
  return `${out}}`;
}

module.exports = { requester };
