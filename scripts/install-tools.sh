#!/usr/bin/env bash
# The chart tests' tools: helm (built from the Go module proxy) and promtool/prometheus (Debian's prometheus
# package), set up by scripts/setup.ts like everything else (`npm run e2e` does it by itself). Prints the folder
# that holds the tools (the tool cache: $AUO_TOOL_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/apiserver-upgrade-operator/tools).
set -euo pipefail
cd "$(dirname "$0")/.."
node=node_modules/.bin/node
[[ -x "$node" ]] || { echo "run npm ci first (the project's Node 24 comes from node_modules)" >&2; exit 1; }
"$node" scripts/setup.ts tools >&2
echo "${AUO_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/apiserver-upgrade-operator/tools}"
