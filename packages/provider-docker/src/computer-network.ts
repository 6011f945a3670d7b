import { AgentComputerError } from "@agent-computer/core";
import type Docker from "dockerode";
import { COMPUTER_LABELS } from "./computer-labels.js";
import { engineFailure } from "./engine-failure.js";

/**
 * The network computers join unless the options name another: a bridge of
 * this project's with inter-container traffic off, so one computer cannot
 * reach another's screen gateway or servers (docs/architecture.md §9), while
 * the host still reaches every computer and every computer the internet.
 */
export const ISOLATED_NETWORK = "agent-computer";

/** Docker's bridge option that, when "false", drops traffic between containers of one bridge. */
const ICC_OPTION = "com.docker.network.bridge.enable_icc";

/**
 * The host's name for the bridge's interface (at most 15 characters), so an
 * operator's firewall rule can keep computers from the host's own services
 * (packages/provider-docker/README.md, "Network").
 */
export const ISOLATED_BRIDGE_INTERFACE = "ac-computers";

/**
 * Makes sure the isolated network is there before a computer joins it, once
 * per provider (a failed attempt is tried again on the next provision), and
 * gives the network a container should name. Other networks are the
 * operator's: they are used as they are.
 */
export function networkPreparer(docker: Docker, network: string): () => Promise<string> {
  if (network !== ISOLATED_NETWORK) return async () => network;
  let ready: Promise<string> | undefined;
  return () => {
    ready ??= ensureIsolatedNetwork(docker, ISOLATED_NETWORK, ISOLATED_BRIDGE_INTERFACE).catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };
}

/**
 * How long a refused create looks for the network another worker is making
 * (1 in 12 runs of the three-worker test had the refusal come first).
 */
const CONCURRENT_CREATE_MS = 5_000;

/**
 * Makes the bridge `name` (its host interface named `bridgeInterface`) with
 * inter-container traffic off, or checks that the one there is so; gives
 * its id. Docker's duplicate check is best effort: two workers creating at
 * once can make two networks of one name (seen on the engine: the name is
 * then "ambiguous"). Every caller keeps the oldest, which any later listing
 * also sees, and removes the others.
 */
export async function ensureIsolatedNetwork(docker: Docker, name: string, bridgeInterface: string): Promise<string> {
  let found = await networksNamed(docker, name);
  if (found.length === 0) {
    let refused: unknown;
    try {
      await docker.createNetwork({
        Name: name,
        Driver: "bridge",
        CheckDuplicate: true,
        Options: { [ICC_OPTION]: "false", "com.docker.network.bridge.name": bridgeInterface },
        Labels: { [COMPUTER_LABELS.managed]: "true" },
      });
    } catch (error) {
      // Another worker may have made it first (409, or its interface name
      // clashed): a network found below is checked like any other.
      refused = error;
    }
    found = await networksNamed(docker, name);
    // A create refused for a clash with another worker's create that is still under way ("networks have
    // same bridge name") can come before that network is listed: it is looked for again, briefly.
    for (let waited = 0; found.length === 0 && refused !== undefined && waited < CONCURRENT_CREATE_MS; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      waited += 100;
      found = await networksNamed(docker, name);
    }
    if (found.length === 0 && refused !== undefined) throw engineFailure(refused, `create the network ${name}`);
  }
  const [kept, ...extra] = found.sort(
    (a, b) => createdOrder(a.Created).localeCompare(createdOrder(b.Created)) || a.Id.localeCompare(b.Id),
  );
  for (const twin of extra) {
    if (twin.Labels?.[COMPUTER_LABELS.managed] !== "true") continue;
    await docker
      .getNetwork(twin.Id)
      .remove()
      .catch(() => {});
  }
  if (!kept) throw new AgentComputerError("UNAVAILABLE", `The Docker network ${name} could not be made.`);
  if (kept.Options?.[ICC_OPTION] !== "false") {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The Docker network ${name} exists but lets containers reach each other (${ICC_OPTION} is not "false"), so computers on it would reach one another. Remove it (docker network rm ${name}) and it is made again isolated, or pass your own \`network\`.`,
      { retryable: false },
    );
  }
  return kept.Id;
}

/**
 * The engine's creation time as a string that sorts in time order: it
 * writes RFC 3339 with its nanoseconds' trailing zeros cut (".12Z" is
 * later than ".119Z"), so the fraction is padded to nine digits.
 */
export function createdOrder(created: string): string {
  const parts = /^(.*?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(created);
  if (!parts) return created;
  const [, seconds, fraction = "", zone] = parts;
  return `${String(Date.parse(`${seconds}${zone}`)).padStart(15, "0")}.${fraction.padEnd(9, "0")}`;
}

async function networksNamed(docker: Docker, name: string): Promise<Docker.NetworkInspectInfo[]> {
  try {
    // The engine's name filter matches parts of names too.
    const listed = await docker.listNetworks({ filters: JSON.stringify({ name: [name] }) });
    return listed.filter((n) => n.Name === name);
  } catch (error) {
    throw engineFailure(error, `list the networks named ${name}`);
  }
}
