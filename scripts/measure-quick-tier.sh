#!/usr/bin/env bash
# Times a contributor's `npm test` on a machine with no Docker engine,
# Chromium or PostgreSQL (docs/testing.md, "Two tiers"): in a
# debian:bookworm-slim container with 2 CPUs, no network and an init
# (which reaps orphans, as a machine's does), this machine's node, npm
# and python3 mounted (a contributor's machine has them; some suites
# serve their pages with python3), a copy of the tree with its
# node_modules (as `npm ci` leaves it) and no dist, nor git (every
# package is built). Needs Docker on this machine, not in the container.
#
#   bash scripts/measure-quick-tier.sh [log-dir]   (npm-test.log: the whole run's output)
set -euo pipefail
cd "$(dirname "$0")/.."
logs=$(mkdir -p "${1:-/tmp/agent-computer-quick-tier}" && cd "${1:-/tmp/agent-computer-quick-tier}" && pwd)
node_bin=$(readlink -f "$(command -v node)")
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
python_prefix=$(python3 -c "import sys; print(sys.prefix)")
docker run --rm --init --cpus 2 --network none -v "$python_prefix:/opt/python:ro" \
  -v "$PWD:/source:ro" -v "$node_bin:/usr/local/bin/node:ro" -v "$npm_dir:/opt/npm:ro" -v "$logs:/logs" \
  debian:bookworm-slim bash -c '
    set -euo pipefail
    ln -s /opt/npm/bin/npm-cli.js /usr/local/bin/npm
    ln -s /opt/python/bin/python3 /usr/local/bin/python3
    ln -s /opt/python/lib/libpython3* /usr/local/lib/ && ldconfig
    mkdir /work && cd /source
    tar --exclude=./.git --exclude="./packages/*/dist" --exclude="./examples/*/dist" --exclude=./.data --exclude=./.scratch -cf - . | tar -xf - -C /work
    cd /work
    started=$(date +%s)
    status=0
    npm test > /logs/npm-test.log 2>&1 || status=$?
    ended=$(date +%s)
    grep -E "^built |Test Files|Tests |Duration|Skipped parts| FAIL |Error:" /logs/npm-test.log || true
    echo "npm test without engines: $((ended - started)) s, exit code $status"
    exit "$status"
  '
