'use strict';
// The `skillcache` package: the addon's classes (native.js, napi-rs's loader) and the error
// classes (errors.js), which the addon is given here, once, to make its errors with.
const native = require('./native.js');
const errors = require('./errors.js');

native.registerErrors(errors.make);

const { registerErrors: _registerErrors, ...api } = native;
const { make: _make, ...classes } = errors;
module.exports = { ...api, ...classes };
