import { randomInt } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import type Docker from "dockerode";
import { DISPLAY_LABELS } from "./computer-labels.js";
import { createdOrder } from "./computer-network.js";
import { EGRESS_LABELS } from "./egress-labels.js";
import { engineFailure, engineStatus } from "./engine-failure.js";

// A computer and its display container share one network of their own
// (README, "The display in its own container"): internal (no way out), with
// only these two on it, so the display's browser reaches the computer's
// loopback proxy (desktop-runtime's loopback-proxy.ts) while the shared
// bridge keeps inter-container traffic off for every other pair.

/** The name the computer answers to on its pair network: the display's browser proxies loopback URLs to it. */
export const COMPUTER_ALIAS = "computer";

/** The pair network of the display container named `displayName`: the sweep of orphan displays removes it with them. */
export const pairNetworkName = (displayName: string) => `${displayName}-net`;

/** Each pair network's subnet size: a /29 holds the bridge, the two containers and room to spare. */
const PAIR_PREFIX = 29;
/** Subnets tried before giving up, each at a random place in the pool (another network may hold one). */
const SUBNET_TRIES = 16;
/** A pair network younger than this may be one another worker is still attaching its containers to. */
const ORPHAN_AGE_MS = 60_000;

/**
 * The /29 subnets of an IPv4 pool in CIDR form (a /16 holds 8,192). Docker's
 * default address pools give about 30 networks in all, so pair networks
 * name their subnets from a pool of their own.
 */
export function pairSubnets(pool: string): { count: number; subnet(index: number): string } {
  const parts = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(pool);
  const octets = parts?.slice(1, 5).map(Number) ?? [];
  const prefix = Number(parts?.[5]);
  if (!parts || octets.some((o) => o > 255) || prefix > PAIR_PREFIX || prefix < 8) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid DockerProviderOptions: at "displayNetworkPool": expected an IPv4 CIDR from /8 to /${PAIR_PREFIX}, got ${pool}.`,
    );
  }
  const mask = (~0 << (32 - prefix)) >>> 0;
  const base = (octets.reduce((n, o) => n * 256 + o, 0) & mask) >>> 0;
  const count = 2 ** (PAIR_PREFIX - prefix);
  const subnet = (index: number) => {
    const n = (base + index * 2 ** (32 - PAIR_PREFIX)) >>> 0;
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}/${PAIR_PREFIX}`;
  };
  return { count, subnet };
}

/**
 * The pair network `name`, made on a free /29 of `pool` unless it is there
 * already (an earlier start that stopped half-way, or another process
 * starting the same display). Docker's duplicate check is best effort
 * (computer-network.ts): two processes making the same one at the very same
 * moment could make two, each then joining both containers to its own.
 */
export async function ensurePairNetwork(
  docker: Docker,
  name: string,
  pool: string,
  signal: AbortSignal,
  extra: PairNetworkExtras = {},
): Promise<void> {
  try {
    signal.throwIfAborted();
    await docker.getNetwork(name).inspect();
    return;
  } catch (error) {
    if (engineStatus(error) !== 404) throw engineFailure(error, `look up the display's network ${name}`);
  }
  await createPairNetwork(docker, name, pool, signal, extra);
}

/** What a computer with an egress policy asks more of its pair network. */
export interface PairNetworkExtras {
  readonly labels?: Record<string, string>;
  /**
   * Gives the host no address on the network (the bridge driver's
   * `inhibit_ipv4`). An internal network still lets its containers reach
   * every address of the host itself through the bridge's own address,
   * the host's loopback services on its other addresses included (measured:
   * a fenced computer reached a server on this host at the provider
   * bridge's gateway); with no host address on it, nothing routes there.
   */
  readonly hostless?: boolean;
}

/** Makes the pair network `name` on a free /29 of `pool`; one of that name made meanwhile is taken. */
async function createPairNetwork(
  docker: Docker,
  name: string,
  pool: string,
  signal: AbortSignal,
  { labels = {}, hostless = false }: PairNetworkExtras,
): Promise<string> {
  const subnets = pairSubnets(pool);
  let refused: unknown;
  for (let attempt = 0; attempt < SUBNET_TRIES; attempt++) {
    signal.throwIfAborted();
    try {
      await docker.createNetwork({
        Name: name,
        Driver: "bridge",
        Internal: true,
        CheckDuplicate: true,
        ...(hostless ? { Options: { "com.docker.network.bridge.inhibit_ipv4": "true" } } : {}),
        IPAM: { Driver: "default", Config: [{ Subnet: subnets.subnet(randomInt(subnets.count)) }] },
        Labels: { ...labels, [DISPLAY_LABELS.pairNetwork]: "true" },
        abortSignal: signal,
      });
      return name;
    } catch (error) {
      if (engineStatus(error) === 409) return name; // made by another caller meanwhile
      refused = error;
      // The engine refuses a subnet another network holds ("Pool overlaps"); anything else is final.
      if (!/overlap/i.test(String((error as Error).message))) break;
    }
  }
  throw engineFailure(refused, `create the display's network ${name} in ${pool}`);
}

/** Puts a container on its pair network, under `aliases`; one already on it stays as it is. */
export async function joinPairNetwork(
  docker: Docker,
  network: string,
  containerId: string,
  aliases: string[],
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  try {
    await docker.getNetwork(network).connect({ Container: containerId, EndpointConfig: { Aliases: aliases } });
  } catch (error) {
    // The engine's answer when it is on it already (403 on the engines measured, 409 on others).
    if (/already exists/i.test(String((error as Error).message))) return;
    throw engineFailure(error, `join the display's network ${network}`);
  }
}

/** Removes a pair network once its containers are gone; one already gone is fine. */
export async function removePairNetwork(docker: Docker, network: string): Promise<void> {
  try {
    await detachEgressProxies(docker, network);
    await docker.getNetwork(network).remove();
  } catch (error) {
    if (engineStatus(error) !== 404) throw engineFailure(error, `remove the display's network ${network}`);
  }
}

/**
 * Takes the shared egress proxy (egress-proxy-container.ts) off a pair
 * network where it is all that is left, so the network can go: a computer
 * with a policy shares its network with the proxy, which outlives it.
 */
async function detachEgressProxies(docker: Docker, network: string, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  const info = await docker.getNetwork(network).inspect();
  const endpoints = Object.keys(info.Containers ?? {});
  if (endpoints.length === 0) return;
  const proxies = await docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [EGRESS_LABELS.proxy], network: [info.Id] }),
    abortSignal: signal,
  });
  const proxyIds = new Set(proxies.map((p) => p.Id));
  if (!endpoints.every((id) => proxyIds.has(id))) return;
  for (const id of endpoints) await docker.getNetwork(network).disconnect({ Container: id, Force: true });
}

/**
 * Removes pair networks that no container is on any more (a crash between
 * destroy's removals, or containers removed by hand). The engine refuses to
 * remove a network that still has a container, and a young one is left to
 * the worker that may be creating its pair.
 */
export async function removeOrphanPairNetworks(docker: Docker, signal: AbortSignal): Promise<string[]> {
  let networks: Docker.NetworkInspectInfo[];
  try {
    networks = await docker.listNetworks({
      filters: JSON.stringify({ label: [`${DISPLAY_LABELS.pairNetwork}=true`] }),
      abortSignal: signal,
    });
  } catch (error) {
    throw engineFailure(error, "list the displays' networks");
  }
  const oldEnough = createdOrder(new Date(Date.now() - ORPHAN_AGE_MS).toISOString());
  const removed: string[] = [];
  for (const network of networks) {
    if (createdOrder(network.Created) > oldEnough) continue;
    const gone = await detachEgressProxies(docker, network.Id, signal)
      .then(() => docker.getNetwork(network.Id).remove({ abortSignal: signal }))
      .then(() => true)
      .catch(() => false);
    if (gone) removed.push(network.Name);
  }
  return removed;
}
