#!/usr/bin/env bash
# Installs the Kubernetes ecosystem's own tools that the tests use, cached by version outside the repo:
# helm built from the Go module proxy; promtool and the prometheus server from Debian's prometheus package. Rendered manifests are
# validated by the real apiservers (server-side dry run), not by kubeconform, which needs schemas from the internet.
# Prints the folder that holds the tools.
set -euo pipefail
cache="${AUO_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/apiserver-upgrade-operator/tools}"
mkdir -p "$cache"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0
HELM_VERSION=v3.22.0

build() { # name module version
  local out="$cache/$1-$3"
  if [[ ! -x "$out" ]]; then
    echo "[tools] building $1 $3" >&2
    GOBIN="$cache/.gobin-$1-$3" go install -trimpath -ldflags "-s -w" "$2@$3" >&2
    mv "$cache/.gobin-$1-$3/$1" "$out"
    rm -rf "$cache/.gobin-$1-$3"
  fi
  ln -sf "$out" "$cache/$1"
}
build helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "[tools] installing promtool and prometheus (Debian package prometheus)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # The package starts a Prometheus daemon where an init system runs; the tests start their own.
  (systemctl stop prometheus 2>/dev/null || service prometheus stop 2>/dev/null || true) >/dev/null
fi
ln -sf "$(command -v promtool)" "$cache/promtool"
echo "$cache"
