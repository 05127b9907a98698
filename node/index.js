'use strict';
// The `skillcache` package: the addon's classes (native.js, napi-rs's loader) and the error
// classes (errors.js), which the addon is given here, once, to make its errors with.
const native = require('./native.js');
const errors = require('./errors.js');
const { requester } = require('./client.js');

native.registerErrors(errors.make);

// `connectClient` hands the addon the requester of the host's client (client.js), which sends
// each request through it; the addon's method takes that requester.
const connectRequester = native.SkillCache.prototype.connectClient;
native.SkillCache.prototype.connectClient = function connectClient(origin, client) {
  return connectRequester.call(this, origin, requester(client));
};

// `{ signal }` (an AbortSignal) on load, loadAll, read and readAll: the addon's method takes an
// Aborter, aborted when the signal is (at once if it already is), which drops the call's work
// where it stands; the AbortError it rejects with gets the signal's reason as its `cause`. The
// listener goes when the call settles, so one signal may serve any number of calls.
function withSignal(options, call) {
  const signal = options?.signal;
  const aborter = new native.Aborter();
  const abort = () => aborter.abort();
  if (signal.aborted) abort();
  else signal.addEventListener('abort', abort, { once: true });
  const done = () => signal.removeEventListener('abort', abort);
  return call(aborter).then(
    (value) => {
      done();
      return value;
    },
    (error) => {
      done();
      if (error instanceof errors.AbortError) error.cause = signal.reason;
      throw error;
    },
  );
}

const cacheProto = native.SkillCache.prototype;
const skillProto = native.LoadedSkill.prototype;
const { load, loadAll } = cacheProto;
const { read, readAll } = skillProto;
// Without a signal, straight to the addon: a hit is a few microseconds, a closure is not free.
cacheProto.load = function (origin, entry, options) {
  if (options?.signal == null) return load.call(this, origin, entry);
  return withSignal(options, (a) => load.call(this, origin, entry, a));
};
cacheProto.loadAll = function (origin, entry, options) {
  if (options?.signal == null) return loadAll.call(this, origin, entry);
  return withSignal(options, (a) => loadAll.call(this, origin, entry, a));
};
skillProto.read = function (reference, options) {
  if (options?.signal == null) return read.call(this, reference);
  return withSignal(options, (a) => read.call(this, reference, a));
};
skillProto.readAll = function (options) {
  if (options?.signal == null) return readAll.call(this);
  return withSignal(options, (a) => readAll.call(this, a));
};

const { registerErrors: _registerErrors, ...api } = native;
const { make: _make, ...classes } = errors;
module.exports = { ...api, ...classes };
