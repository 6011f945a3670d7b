import type { Machine } from "@agent-computer/core";

/**
 * The variable every command a bot runs through its run carries,
 * `<lease key>#<token>`, so that what a stale run left behind can be found
 * once a newer run of the bot has the lease. The desktop runtime's own
 * commands (displays, the screen gateway, browsers) are not tagged: they
 * serve the computer, not one run.
 */
export const LEASE_TAG_VARIABLE = "AGENT_COMPUTER_LEASE";

/** `machine` whose `exec` tags each command with the run's lease (the caller cannot override the tag). */
export function taggedWithLease(machine: Machine, lease: { key: string; token: number }): Machine {
  const tag = `${lease.key}#${lease.token}`;
  return new Proxy(machine, {
    get(target, property, receiver) {
      if (property !== "exec") return Reflect.get(target, property, receiver);
      const exec: Machine["exec"] = (req, ctx) =>
        target.exec({ ...req, env: { ...req?.env, [LEASE_TAG_VARIABLE]: tag } }, ctx);
      return exec;
    },
  });
}

/**
 * A run's first command in its computer: makes the bot's folders, then stops
 * every process that an earlier holder of the same execution lease left
 * running (its `AGENT_COMPUTER_LEASE` tag names the same key with a smaller
 * token). A run whose lease expired while its commands ran on, and which a
 * newer run has since replaced, acts no more (docs/architecture.md §6).
 *
 * What it does not do: stop processes when a run ends (background work may
 * outlive a run by design; the scanner reports it), or catch a process that
 * cleared its own environment (`env -i`). Writes through the SDK stay fenced
 * either way.
 *
 * $1 the bot's folder, $2 the lease key, $3 the new token.
 */
export const START_RUN_SCRIPT = `mkdir -p -- "$1" shared || exit 1
key=$2 token=$3
for environ in /proc/[0-9]*/environ; do
  pid=\${environ#/proc/}; pid=\${pid%/environ}
  [ "$pid" = "$$" ] && continue
  tag=$(tr '\\0' '\\n' < "$environ" 2>/dev/null | grep -m1 '^${LEASE_TAG_VARIABLE}=') || continue
  value=\${tag#${LEASE_TAG_VARIABLE}=}
  [ "\${value%#*}" = "$key" ] || continue
  held=\${value##*#}
  case "$held" in ''|*[!0-9]*) continue ;; esac
  [ "$held" -lt "$token" ] && kill -KILL "$pid" 2>/dev/null
done
exit 0`;
