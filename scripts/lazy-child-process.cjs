// What the CLI's bundle gives commander for `node:child_process`: the module, loaded on first use.
// Commander requires it at start for a feature plinth does not use (subcommands that are executables of
// their own), and loading it (with net and streams) is a tenth of a short command's start.

let loaded;

module.exports = new Proxy(
  {},
  {
    get(_, name) {
      loaded ??= require('node:child_process');
      return loaded[name];
    },
  },
);
