import type { ProviderRef } from "@agent-computer/core";
import { AgentComputerError, parseInput } from "@agent-computer/core";
import type { ComputerRecord } from "@agent-computer/leases";
import { z } from "zod";
import type { ReconcileHost } from "./reconcile-host.js";
import type { ReconcileOptions } from "./reconcile-options.js";
import type { ReconcileReport } from "./reconcile-report.js";

const optionsSchema = z.object({
  orphanGraceMs: z
    .number()
    .int()
    .nonnegative()
    .default(10 * 60_000),
  republishAfterMs: z.number().int().nonnegative().default(60_000),
});

/**
 * One pass that brings the state store and the provider back in line:
 * interrupted operations are marked, missed enqueues republished, machines
 * of this deployment that no record owns destroyed after a grace period
 * (never while a reservation holds their computer), and records whose
 * machine is gone get their open stretch closed as `reconciled`.
 *
 * Not done: opening a stretch for a running machine whose start was not
 * recorded. The contract's `list` returns refs only and cannot tell a
 * running machine from a stopped one, and `reconnect` would resume a
 * stopped one, so the reconciler cannot tell without changing what it
 * observes.
 */
export async function reconcileComputers(
  host: ReconcileHost,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const { orphanGraceMs, republishAfterMs } = parseInput(optionsSchema, options, "ReconcileOptions");
  const interrupted = await host.operations.markInterrupted();
  const republished = await host.operations.republishQueued(republishAfterMs);

  // List first, then read reservations: a machine in this list was made
  // before the list, so an operation that made it had reserved before too.
  const listed = await host.provider.list({ labels: { ...host.deploymentLabels } });
  const records: ComputerRecord[] = [];
  const held = await host.operations.openComputerIds();
  for (const computerId of await host.ledger.computerIds()) {
    const record = await host.leases.getComputer(computerId);
    if (!record) {
      await host.ledger.removeComputer(computerId); // deleted elsewhere
      continue;
    }
    records.push(record);
    if (await host.leases.getReservation(computerId)) held.add(computerId);
  }
  const owned = new Set<string>(records.flatMap((r) => (r.providerRef ? [r.providerRef] : [])));
  // A reserved computer may hold a machine its record does not name yet
  // (an update between provisioning and switching): all its machines are kept.
  for (const computerId of held) {
    const labels = { ...host.deploymentLabels, [host.computerLabel]: computerId };
    for (const ref of await host.provider.list({ labels })) owned.add(ref);
  }

  const orphans = listed.filter((ref) => !owned.has(ref));
  const firstSeen = await host.ledger.sightOrphans(orphans);
  const now = await host.ledger.now();
  const destroyed: string[] = [];
  const awaitingGrace: string[] = [];
  for (const ref of orphans) {
    if (now - (firstSeen.get(ref) ?? now) < orphanGraceMs) {
      awaitingGrace.push(ref);
      continue;
    }
    await destroy(host, ref);
    destroyed.push(ref);
  }

  const present = new Set<string>(listed);
  const reconciled: string[] = [];
  for (const record of records) {
    const ref = record.providerRef;
    if (!ref || record.providerKind !== host.provider.kind || present.has(ref) || held.has(record.computerId)) continue;
    // Not under this deployment's labels: confirm by the computer's own
    // label, which also finds machines made before the deployment label.
    const mine = await host.provider.list({ labels: { [host.computerLabel]: record.computerId } });
    if (mine.includes(ref as ProviderRef)) continue;
    try {
      await host.forgetGoneMachine(record);
      reconciled.push(record.computerId);
    } catch (error) {
      // The record moved since it was read (a run brought the computer up): the next pass looks again.
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
    }
  }
  return { interrupted, republished, destroyed, awaitingGrace, reconciled };
}

async function destroy(host: ReconcileHost, ref: ProviderRef): Promise<void> {
  // The contract destroys through a machine handle; reconnect may resume a
  // stopped orphan first, which is harmless since it is removed right away.
  const machine = await host.provider.reconnect(ref);
  if (machine !== "gone") await machine.destroy();
}
