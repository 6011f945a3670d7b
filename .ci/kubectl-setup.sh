#!/usr/bin/env bash
# kubectl for the Kubernetes suites' outside-client test: the one on the
# PATH when it runs, else Debian's kubernetes-client unpacked (not
# installed: a kubectl of another package may own /usr/bin/kubectl) into
# a folder of its own. Prints the kubectl to use; idempotent.
set -euo pipefail
if command -v kubectl >/dev/null 2>&1 && kubectl version --client >/dev/null 2>&1; then
  command -v kubectl
  exit 0
fi
dir=/opt/agent-computer-ci/kubernetes-client
if [ ! -x "$dir/usr/bin/kubectl" ]; then
  work=$(mktemp -d)
  (cd "$work" && apt-get update -qq >&2 && apt-get download -qq kubernetes-client >&2)
  mkdir -p "$dir"
  dpkg -x "$work"/kubernetes-client_*.deb "$dir"
  rm -rf "$work"
fi
"$dir/usr/bin/kubectl" version --client >&2
echo "$dir/usr/bin/kubectl"
