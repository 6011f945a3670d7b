#!/usr/bin/env bash
# Gets a Docker engine and the computer image onto this machine, from nothing
# or on top of what an earlier run left (engine, base image, computer image).
# Idempotent: every step first checks whether its result is already there.
#
#   bash .ci/docker-setup.sh            # engine + base image + computer image
#   AGENT_COMPUTER_SKIP_IMAGE=1 ...     # engine + base image only
#   AGENT_COMPUTER_PACKAGES_BUILT=1 ... # the packages are built already: build none
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
base_image="debian:bookworm-slim"
log() { printf '[docker-setup] %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
  log "needs root (or sudo) to install and start the engine"
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Packages: Debian's engine, and debootstrap to make the base image when
#    no registry answers.
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. The engine: start dockerd only when none answers. iptables stays on (the
#    engine's default): it is what keeps computers on the provider's network
#    from reaching each other (docs/architecture.md §9). IPv6 is off, as no
#    computer network has it. Builds use --network host all the same.
if ! docker version >/dev/null 2>&1; then
  log "starting dockerd"
  # A machine restored from a snapshot can keep the last engine's pid file and
  # sockets with no process behind them; dockerd then waits for a containerd
  # that never answers. With none running, they are stale.
  if ! pgrep -x containerd >/dev/null && ! pgrep -x dockerd >/dev/null; then
    as_root rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid \
      /var/run/docker/containerd/containerd.sock /var/run/docker/containerd/containerd.sock.ttrpc \
      /var/run/docker/containerd/containerd-debug.sock
  fi
  as_root sh -c 'nohup dockerd --ip6tables=false >/tmp/dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do
    docker version >/dev/null 2>&1 && break
    sleep 1
  done
  docker version >/dev/null 2>&1 || { log "dockerd did not answer within 60 s; see /tmp/dockerd.log"; exit 1; }
fi
log "engine $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"

# 3. The base image: use the engine's, else pull, else make it from Debian's
#    packages with the mirror this machine's apt already uses.
if docker image inspect "$base_image" >/dev/null 2>&1; then
  log "base image $base_image present"
elif timeout 60 docker pull "$base_image" >/dev/null 2>&1; then
  log "pulled $base_image"
else
  mirror="$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  if [ -z "$mirror" ]; then
    mirror="$(awk '/^deb / && $0 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
  fi
  [ -n "$mirror" ] || { log "no registry and no apt mirror found to make $base_image"; exit 1; }
  log "no registry answers: making $base_image with debootstrap from this machine's apt mirror"
  rootfs="$(mktemp -d /tmp/agent-computer-rootfs.XXXXXX)"
  trap 'as_root rm -rf "$rootfs"' EXIT
  as_root debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >/tmp/agent-computer-debootstrap.log 2>&1 ||
    { log "debootstrap failed; see /tmp/agent-computer-debootstrap.log"; exit 1; }
  # Give apt inside the image the same sources as this machine (security
  # updates included), as the published slim image has its own.
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    as_root cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/debian.sources"
    as_root rm -f "$rootfs/etc/apt/sources.list"
  fi
  as_root tar -C "$rootfs" -c . | docker import - "$base_image" >/dev/null
  log "made $base_image"
fi

# 4. The computer image, through provider-docker's image command (it reuses
#    an image with the exact tag it computes). desktop-runtime is always
#    rebuilt: its build writes the in-computer CLI bundle the tag covers.
if [ "${AGENT_COMPUTER_SKIP_IMAGE:-}" != "1" ]; then
  cd "$root"
  [ -d node_modules ] || npm ci
  # What the image command needs, in dependency order: the in-computer CLI
  # bundles core and page-browser; provider-docker imports checkpoint.
  # AGENT_COMPUTER_PACKAGES_BUILT=1 says the caller has just built every
  # package from this tree (.ci/run does), so none is built twice.
  if [ "${AGENT_COMPUTER_PACKAGES_BUILT:-}" != "1" ]; then
    for pkg in core page-browser checkpoint; do
      [ -f "packages/$pkg/dist/index.js" ] || npm run build -w "packages/$pkg" >/dev/null
    done
    npm run build -w packages/desktop-runtime >/dev/null
    npm run build -w packages/provider-docker >/dev/null
  fi
  node packages/provider-docker/dist/bin/agent-computer-image.js build
fi
