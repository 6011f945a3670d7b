#!/usr/bin/env bash
# Debian's Chromium on the host, for the browser tests that drive the screen
# viewer with playwright-core (never a downloaded browser). Idempotent.
set -euo pipefail
if ! [ -x /usr/bin/chromium ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
/usr/bin/chromium --version
