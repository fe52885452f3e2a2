#!/usr/bin/env bash
# Builds kube-apiserver or kubectl (k8s.io/kubernetes at a version) and etcd (go.etcd.io/etcd/server/v3)
# from the Go module proxy into a cache outside the repo, keyed by version.
# Usage: build-binaries.sh kube-apiserver v1.35.4 | build-binaries.sh kubectl v1.35.4 | build-binaries.sh etcd v3.6.16
# Prints the path of the built binary on stdout; progress goes to stderr.
set -euo pipefail
what="$1"; version="$2"
cache="${AUO_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/apiserver-upgrade-operator/bin}"
out="$cache/$what-$version"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOFLAGS="-mod=mod" CGO_ENABLED=0
if [[ -x "$out" ]]; then echo "$out"; exit 0; fi
mkdir -p "$cache"
work="$(mktemp -d "$cache/.build-$what-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
log() { echo "[build $what $version] $(date +%T) $*" >&2; }
case "$what" in
  kube-apiserver|kubectl)
    [[ "$version" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "bad kubernetes version: $version" >&2; exit 2; }
    minor="${BASH_REMATCH[1]}"; patch="${BASH_REMATCH[2]}"
    log "fetching k8s.io/kubernetes@$version go.mod"
    gomod="$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')"
    # Every staging module k8s.io/kubernetes replaces with ./staging/... is published as k8s.io/X v0.<minor>.<patch>.
    staging="$(sed -n 's#^\s*\(replace \)\?\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\2#p' "$gomod" | sort -u)"
    [[ -n "$staging" ]] || { echo "no staging modules found in $gomod" >&2; exit 1; }
    {
      echo "module auo.local/build"
      echo "go 1.25"
      echo "require k8s.io/kubernetes $version"
      for m in $staging; do echo "replace $m => $m v0.$minor.$patch"; done
    } > go.mod
    log "resolving dependencies ($(echo "$staging" | wc -l) staging modules)"
    go get "k8s.io/kubernetes/cmd/$what@$version" >&2
    pkg=k8s.io/component-base/version
    ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
    log "compiling (minutes on a cold cache)"
    go build -trimpath -ldflags "$ldflags" -o "$work/out" "k8s.io/kubernetes/cmd/$what" >&2
    ;;
  etcd)
    [[ "$version" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { echo "bad etcd version: $version" >&2; exit 2; }
    printf 'module auo.local/build\ngo 1.25\n' > go.mod
    log "resolving go.etcd.io/etcd/server/v3@$version"
    go get "go.etcd.io/etcd/server/v3@$version" >&2
    log "compiling"
    go build -trimpath -ldflags "-s -w" -o "$work/out" go.etcd.io/etcd/server/v3 >&2
    ;;
  *) echo "unknown binary: $what (kube-apiserver|kubectl|etcd)" >&2; exit 2 ;;
esac
mv "$work/out" "$out"
log "built $out"
echo "$out"
