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

const { registerErrors: _registerErrors, ...api } = native;
const { make: _make, ...classes } = errors;
module.exports = { ...api, ...classes };
