import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { Socket } from "node:net";

/**
 * Who may open a connection to the screen gateway, and how many may wait
 * for their upgrade at once (docs/architecture.md §4, §7).
 *
 * - Sources: with `AGENT_COMPUTER_GATEWAY_SOURCES=default-gateway` (the
 *   Docker provider sets it), only the computer's default gateway (the
 *   host's end of its network, where published ports arrive from) and
 *   loopback may connect: another computer on the same or a routed network
 *   is refused at accept, before it reads a byte. Unset, every source may
 *   (Kubernetes reaches pods from addresses the pod cannot know).
 * - Pending: a connection that has not finished its upgrade counts against
 *   a cap per source and a cap in all; over either it is closed at once, and
 *   one that has not upgraded within `PENDING_TIMEOUT_MS` is closed, so a
 *   flood of half-open requests cannot exhaust the gateway's descriptors.
 */
export const MAX_PENDING_PER_SOURCE = 32;
export const MAX_PENDING = 256;
export const PENDING_TIMEOUT_MS = 10_000;

export interface AdmissionLog {
  write(event: string, fields: Record<string, string | number | boolean | undefined>): void;
}

export function admitConnections(server: Server, log: AdmissionLog): void {
  const allowed = allowedSources(process.env.AGENT_COMPUTER_GATEWAY_SOURCES);
  const pending = new Map<string, number>();
  let pendingTotal = 0;
  let refusedSince = 0;
  server.on("connection", (socket: Socket) => {
    const source = normalise(socket.remoteAddress ?? "");
    if (allowed && !allowed.has(source)) {
      refused(log, "source", source, ++refusedSince);
      socket.destroy();
      return;
    }
    const count = pending.get(source) ?? 0;
    if (count >= MAX_PENDING_PER_SOURCE || pendingTotal >= MAX_PENDING) {
      refused(log, "pending", source, ++refusedSince);
      socket.destroy();
      return;
    }
    pending.set(source, count + 1);
    pendingTotal++;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      pendingTotal--;
      const left = (pending.get(source) ?? 1) - 1;
      if (left <= 0) pending.delete(source);
      else pending.set(source, left);
    };
    const timer = setTimeout(() => {
      settle();
      socket.destroy();
    }, PENDING_TIMEOUT_MS);
    timer.unref();
    // A plain request answered, an upgrade taken over or the socket gone: no longer pending.
    socket.once("close", settle);
    (socket as Socket & { settleAdmission?: () => void }).settleAdmission = settle;
  });
}

/** Marks a socket as no longer waiting for its upgrade (the gateway took it over). */
export function upgraded(socket: unknown): void {
  (socket as { settleAdmission?: () => void }).settleAdmission?.();
}

function allowedSources(setting: string | undefined): Set<string> | undefined {
  if (!setting) return undefined;
  const sources = new Set(["127.0.0.1", "::1"]);
  for (const part of setting.split(",").map((p) => p.trim())) {
    if (part === "default-gateway") {
      const gateway = defaultGateway();
      if (gateway) sources.add(gateway);
    } else if (part) sources.add(normalise(part));
  }
  return sources;
}

/** The IPv4 default gateway from /proc/net/route (hex, little-endian). */
function defaultGateway(): string | undefined {
  let table: string;
  try {
    table = readFileSync("/proc/net/route", "utf8");
  } catch {
    return undefined;
  }
  for (const line of table.split("\n").slice(1)) {
    const [, destination, gateway] = line.trim().split(/\s+/);
    if (destination !== "00000000" || !gateway) continue;
    const n = Number.parseInt(gateway, 16);
    return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, (n >>> 24) & 255].join(".");
  }
  return undefined;
}

function normalise(address: string): string {
  return address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
}

/** One log line per refusal at first, then one per thousand: a flood must not fill the disk. */
function refused(log: AdmissionLog, why: string, source: string, count: number): void {
  if (count <= 10 || count % 1000 === 0) log.write("refuse-connection", { why, source, count });
}
