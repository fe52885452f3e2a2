#!/usr/bin/env bash
# Builds, from the Go module proxy, into a cache outside the repo keyed by version:
#   kube-apiserver, kubectl,  k8s.io/kubernetes at a version (v1.35.4); the last three for the nodes mode
#   kubelet, kube-controller-manager, kube-scheduler, kube-proxy
#   kubeadm                   the same module: the real-kubeadm cluster (e2e/cluster/kubeadm/) and its upgrade
#   crictl                    sigs.k8s.io/cri-tools (v1.36.0): kubeadm's preflight and image pulls talk CRI through it
#   cni-plugins               github.com/containernetworking/plugins (v1.10.0): a folder with bridge, host-local,
#                             loopback, portmap (the nodes mode's Pod network)
#   etcd                      go.etcd.io/etcd/server/v3 (v3.6.16)
#   helm                      helm.sh/helm/v3 (v3.22.0)
#   prometheus                github.com/prometheus/prometheus (v3.16.0 = module v0.316.0), with kubernetes_sd_configs
#   prometheus-operator       github.com/prometheus-operator/prometheus-operator (v0.85.0): its operator command
#   syft, krew, actionlint    the release's: github.com/anchore/syft, sigs.k8s.io/krew, github.com/rhysd/actionlint
# Usage: build-binaries.sh <kube-apiserver|kubectl|kubelet|kube-controller-manager|kube-scheduler|kube-proxy|kubeadm|crictl|etcd|helm|cni-plugins|prometheus|prometheus-operator|syft|krew|actionlint> <version>
# Prints the path of the built binary (for cni-plugins: of the folder of plugins) on stdout. Progress goes to stderr: log lines "[build ...]", "go: downloading"
# lines while modules are fetched, then, for e2e/cluster/binaries.ts to count:
#   @@waiting            another process holds this binary's build lock (it is building the same thing)
#   @@total <n>          packages the binary is made of (go list -deps)
#   @@stale <n>          of those, how many the build cache lacks (go list's Stale): what is left to compile
#   @@compile            `go build -v` starts: every further line naming a package is one package compiled
# The cache folder is $AUO_BIN_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/apiserver-upgrade-operator/bin; GOCACHE and
# GOMODCACHE are Go's (set them to build from empty caches without touching the shared ones).
set -euo pipefail
# The whole script is one compound command, which bash reads to its end before running any of it: a checkout that
# changes this file while a build runs (a 20-minute kube-apiserver build, say) cannot change what that build runs.
{
what="$1"; version="$2"
cache="${AUO_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/apiserver-upgrade-operator/bin}"
out="$cache/$what-$version"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOFLAGS="-mod=mod" CGO_ENABLED=0
if [[ -x "$out" ]]; then echo "$out"; exit 0; fi
mkdir -p "$cache"
# One build per binary at a time, across processes: a second one waits, then finds it built.
exec 9>"$cache/.lock-$what-$version"
if ! flock -n 9; then echo "@@waiting" >&2; flock 9; fi
if [[ -x "$out" ]]; then echo "$out"; exit 0; fi
work="$(mktemp -d "$cache/.build-$what-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
log() { echo "[build $what $version] $(date +%T) $*" >&2; }
tags=""

# compile <package> <ldflags> [more packages]: counts, then builds with -v so that each compiled package is one
# line. One package: the binary $work/out; several: the folder $work/out/ with one binary per package.
compile() {
  local pkg="$1" ldflags="$2"; shift 2
  local pkgs=("$pkg" "$@") dest="$work/out"
  [[ $# -eq 0 ]] || { mkdir -p "$work/out"; dest="$work/out/"; }
  local tagflag=(); [[ -z "$tags" ]] || tagflag=("-tags=$tags")
  echo "@@total $(go list "${tagflag[@]}" -deps "${pkgs[@]}" | sort -u | wc -l)" >&2
  echo "@@stale $(go list "${tagflag[@]}" -trimpath -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' "${pkgs[@]}" | sort -u | grep -c . || true)" >&2
  echo "@@compile" >&2
  go build "${tagflag[@]}" -v -trimpath -ldflags "$ldflags" -o "$dest" "${pkgs[@]}" >&2
}

# own_module <go get target> <ldflags> <package> [more packages]: a tool whose own go.mod decides every dependency,
# built as `go install <target>` would. $tags (build tags) apply to the compile only.
own_module() {
  local target="$1" ldflags="$2"; shift 2
  printf 'module auo.local/build\ngo 1.25\n' > go.mod
  log "resolving $target"
  go get "$target" >&2
  log "compiling"
  compile "$1" "$ldflags" "${@:2}"
}

case "$what" in
  kube-apiserver|kubectl|kubelet|kube-controller-manager|kube-scheduler|kube-proxy|kubeadm)
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
    log "compiling"
    compile "k8s.io/kubernetes/cmd/$what" "$ldflags"
    ;;
  etcd)
    [[ "$version" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { echo "bad etcd version: $version" >&2; exit 2; }
    own_module "go.etcd.io/etcd/server/v3@$version" "-s -w" go.etcd.io/etcd/server/v3
    ;;
  helm)
    [[ "$version" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { echo "bad helm version: $version" >&2; exit 2; }
    # The same build as `go install helm.sh/helm/v3/cmd/helm@<version>`: helm's own go.mod decides every dependency.
    own_module "helm.sh/helm/v3/cmd/helm@$version" "-s -w -X helm.sh/helm/v3/internal/version.version=$version" helm.sh/helm/v3/cmd/helm
    ;;
  crictl)
    [[ "$version" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "bad cri-tools version: $version" >&2; exit 2; }
    # cri-tools' own go.mod decides every dependency (it vendors them; -mod=mod takes them from the proxy instead).
    own_module "sigs.k8s.io/cri-tools/cmd/crictl@$version" "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$version" sigs.k8s.io/cri-tools/cmd/crictl
    ;;
  cni-plugins)
    [[ "$version" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "bad CNI plugins version: $version" >&2; exit 2; }
    # The reference plugins a Pod network needs: bridge + host-local (the Pods' veths and addresses), loopback
    # (containerd sets up every Pod's lo with it), portmap (hostPort). Their own go.mod decides every dependency.
    p=github.com/containernetworking/plugins/plugins
    own_module "github.com/containernetworking/plugins@$version" "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$version" \
      "$p/main/bridge" "$p/ipam/host-local" "$p/main/loopback" "$p/meta/portmap"
    ;;
  prometheus)
    [[ "$version" =~ ^v3\.([0-9]+)\.([0-9]+)$ ]] || { echo "bad Prometheus version: $version" >&2; exit 2; }
    # Prometheus v3.M.P is the Go module github.com/prometheus/prometheus v0.3MM.P. Built upstream's way with only
    # the service discoveries a Pod in a cluster needs (static, file, http and kubernetes: build tags remove_all_sd,
    # enable_kubernetes_sd): Debian's prometheus has no kubernetes_sd_configs. Its own go.mod decides every dependency.
    modver="$(printf 'v0.3%02d.%d' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")"
    v=github.com/prometheus/common/version
    tags=remove_all_sd,enable_kubernetes_sd own_module "github.com/prometheus/prometheus/cmd/prometheus@$modver" \
      "-s -w -X $v.Version=${version#v} -X $v.Revision=$modver -X $v.Branch=module -X $v.BuildUser=auo -X $v.BuildDate=19700101-00:00:00" \
      github.com/prometheus/prometheus/cmd/prometheus
    ;;
  prometheus-operator)
    [[ "$version" =~ ^v0\.[0-9]+\.[0-9]+$ ]] || { echo "bad prometheus-operator version: $version" >&2; exit 2; }
    # As `go install github.com/prometheus-operator/prometheus-operator/cmd/operator@<version>`: its own go.mod
    # decides every dependency. The binary upstream's image ships as /bin/operator.
    v=github.com/prometheus/common/version
    own_module "github.com/prometheus-operator/prometheus-operator/cmd/operator@$version" \
      "-s -w -X $v.Version=${version#v} -X $v.Revision=module -X $v.Branch=module -X $v.BuildUser=auo -X $v.BuildDate=19700101-00:00:00" \
      github.com/prometheus-operator/prometheus-operator/cmd/operator
    ;;
  syft|krew|actionlint)
    # The release's tools (scripts/release.ts, e2e/extended/release.e2e.ts, test/release/workflow.test.ts), each built as
    # `go install <module>/cmd/<what>@<version>` would: its own go.mod decides every dependency.
    [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "bad $what version: $version" >&2; exit 2; }
    case "$what" in
      syft) mod=github.com/anchore/syft; ldflags="-s -w -X main.version=${version#v}" ;;
      krew) mod=sigs.k8s.io/krew; ldflags="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$version -X sigs.k8s.io/krew/internal/version.gitCommit=module" ;;
      actionlint) mod=github.com/rhysd/actionlint; ldflags="-s -w -X github.com/rhysd/actionlint.version=$version" ;;
    esac
    own_module "$mod/cmd/$what@$version" "$ldflags" "$mod/cmd/$what"
    ;;
  *) echo "unknown binary: $what (kube-apiserver|kubectl|kubelet|kube-controller-manager|kube-scheduler|kube-proxy|kubeadm|crictl|etcd|helm|cni-plugins|prometheus|prometheus-operator|syft|krew|actionlint)" >&2; exit 2 ;;
esac
mv "$work/out" "$out"
log "built $out"
echo "$out"
exit 0
}
