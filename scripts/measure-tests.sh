#!/usr/bin/env bash
# Measures every test file alone, one after another, with the machine's CPU
# use sampled every 2 s, and records each file's seconds and cores in
# test/durations.json (what test/support/planned-sequencer.ts plans the
# side-by-side run from) and prints the table docs/testing.md keeps.
# Takes about as long as the files' times added up (30 minutes in CI's
# setup). Run it on a quiet machine with the engines CI has (.ci/run's set-up).
#
#   CI=1 bash scripts/measure-tests.sh [out-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-$(mktemp -d /tmp/agent-computer-measure.XXXXXX)}"
mkdir -p "$out"
sample_cpu() {
  local prev cur idle total
  read -r -a prev < /proc/stat
  while sleep 2; do
    read -r -a cur < /proc/stat
    idle=$(( (cur[4] + cur[5]) - (prev[4] + prev[5]) ))
    total=0
    for i in 1 2 3 4 5 6 7 8; do total=$(( total + cur[i] - prev[i] )); done
    [ "$total" -gt 0 ] && echo "$(date +%s%3N) $(awk -v i="$idle" -v t="$total" 'BEGIN { printf "%.3f", 1 - i / t }')"
    prev=("${cur[@]}")
  done
}
sample_cpu > "$out/cpu.log" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
status=0
AGENT_COMPUTER_TEST_JSON="$out/report.json" AGENT_COMPUTER_TEST_WORKERS=1 npx vitest run || status=$?
node scripts/test-durations.mjs "$out/report.json" --cpu "$out/cpu.log" --write test/durations.json
echo "report, CPU log: $out"
exit "$status"
