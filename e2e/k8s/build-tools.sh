#!/usr/bin/env bash
# Builds the e2e Kubernetes toolchain from Go modules into a cache outside the repo:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, helm,
#   and this directory's own node-agent and testhttp.
# Idempotent: each group is rebuilt only when its inputs (version, flags, wrapper go.mod/go.sum,
# sources, the Go version) change; a warm run takes about a second.
#
# Usage: build-tools.sh [group...]        groups: k8s etcd helm agent (default: all)
# Env:   KEEP_E2E_CACHE  cache root (default ~/.cache/keep-e2e); binaries go to $KEEP_E2E_CACHE/bin
#        GOMODCACHE/GOCACHE are honoured as usual (point them at empty dirs to measure a cold build)
#        KEEP_E2E_NICE   nice level for go builds (default 15)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${KEEP_E2E_CACHE:-$HOME/.cache/keep-e2e}"
BIN="$CACHE/bin"
STAMPS="$CACHE/stamps"
NICE="${KEEP_E2E_NICE:-15}"

# Pinned versions (the wrapper go.mod files must agree).
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
HELM_VERSION=v4.3.2

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -buildvcs=false -mod=readonly"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

mkdir -p "$BIN" "$STAMPS"
exec 9>"$CACHE/build.lock"
flock 9

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# stamp_of GROUP RECIPE FILES... -> hash of the inputs (the recipe string names the version and
# flags, so editing comments in this script does not trigger a rebuild)
stamp_of() {
  local group="$1" recipe="$2"; shift 2
  { echo "$group $recipe CGO_ENABLED=$CGO_ENABLED"; "$GO" version; sha256sum "$@" | cut -d' ' -f1; } | sha256sum | cut -d' ' -f1
}

# up_to_date GROUP STAMP BINARIES...
up_to_date() {
  local group="$1" stamp="$2"; shift 2
  [[ -f "$STAMPS/$group" && "$(cat "$STAMPS/$group")" == "$stamp" ]] || return 1
  local b; for b in "$@"; do [[ -x "$BIN/$b" ]] || return 1; done
}

gobuild() { # DIR LDFLAGS PKGS...
  local dir="$1" ldflags="$2"; shift 2
  (cd "$dir" && nice -n "$NICE" "$GO" build -trimpath -ldflags "-s -w $ldflags" -o "$BIN/" "$@")
}

build_k8s() {
  local d="$HERE/tools/k8s" minor
  minor="$(echo "$K8S_VERSION" | cut -d. -f2)"
  local s; s="$(stamp_of k8s "$K8S_VERSION kube-apiserver,kube-controller-manager,kube-scheduler,kubectl -s -w" "$d/go.mod" "$d/go.sum")"
  if up_to_date k8s "$s" kube-apiserver kube-controller-manager kube-scheduler kubectl; then
    log "k8s $K8S_VERSION up to date"; return; fi
  log "building kube-apiserver kube-controller-manager kube-scheduler kubectl $K8S_VERSION"
  local t0=$SECONDS date; date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local x="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    x+=" -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  gobuild "$d" "$x" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  echo "$s" >"$STAMPS/k8s"
  log "k8s built in $((SECONDS - t0))s"
}

build_etcd() {
  local d="$HERE/tools/etcd"
  local s; s="$(stamp_of etcd "$ETCD_VERSION -s -w" "$d/go.mod" "$d/go.sum")"
  if up_to_date etcd "$s" etcd; then log "etcd $ETCD_VERSION up to date"; return; fi
  log "building etcd $ETCD_VERSION"
  local t0=$SECONDS
  (cd "$d" && nice -n "$NICE" "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
  echo "$s" >"$STAMPS/etcd"
  log "etcd built in $((SECONDS - t0))s"
}

build_helm() {
  local d="$HERE/tools/helm"
  local s; s="$(stamp_of helm "$HELM_VERSION -s -w" "$d/go.mod" "$d/go.sum")"
  if up_to_date helm "$s" helm; then log "helm $HELM_VERSION up to date"; return; fi
  log "building helm $HELM_VERSION"
  local t0=$SECONDS
  gobuild "$d" "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
    helm.sh/helm/v4/cmd/helm
  echo "$s" >"$STAMPS/helm"
  log "helm built in $((SECONDS - t0))s"
}

build_agent() {
  local d="$HERE/agent"
  local files; mapfile -t files < <(find "$d" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | sort)
  local s; s="$(stamp_of agent "-s -w" "${files[@]}")"
  if up_to_date agent "$s" node-agent testhttp; then log "agent up to date"; return; fi
  log "building node-agent testhttp"
  local t0=$SECONDS
  gobuild "$d" "" ./cmd/node-agent ./cmd/testhttp
  echo "$s" >"$STAMPS/agent"
  log "agent built in $((SECONDS - t0))s"
}

groups=("$@")
[[ ${#groups[@]} -gt 0 ]] || groups=(agent etcd k8s helm)
t_all=$SECONDS
for g in "${groups[@]}"; do
  case "$g" in
    k8s) build_k8s ;; etcd) build_etcd ;; helm) build_helm ;; agent) build_agent ;;
    *) echo "unknown group: $g" >&2; exit 2 ;;
  esac
done
cat >"$BIN/VERSIONS" <<EOF
kubernetes $K8S_VERSION (kube-apiserver kube-controller-manager kube-scheduler kubectl)
etcd $ETCD_VERSION
helm $HELM_VERSION
EOF
log "done in $((SECONDS - t_all))s; binaries in $BIN"
