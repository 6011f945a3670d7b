#!/usr/bin/env bash
# The display stack a host computer's private display runs on this host
# (packages/provider-host): the packages the computer image installs for
# its desktop (packages/desktop-runtime/image/Dockerfile), from Debian.
# Idempotent: installs only what is missing.
set -euo pipefail
need=()
for pair in Xvfb:xvfb openbox:openbox xdotool:xdotool xdpyinfo:x11-utils xprop:x11-utils \
  x11vnc:x11vnc chromium:chromium python3:python3 convert:imagemagick xauth:xauth; do
  program=${pair%%:*}
  package=${pair#*:}
  command -v "$program" >/dev/null 2>&1 || need+=("$package")
done
if [ "${#need[@]}" -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${need[@]}" fonts-liberation fonts-dejavu-core >/dev/null
fi
# X servers put their sockets here; a booted system's x11-common makes it,
# a container that never booted has none (an X server of an ordinary user
# would then make it its own, and the next user's could not use it).
[ -d /tmp/.X11-unix ] || install -d -m 1777 /tmp/.X11-unix
Xvfb -help 2>&1 | head -n 1 || true
xdotool --version
