import type { ProviderRef } from "@agent-computer/core";
import { AgentComputerError, COMPUTER_LABELS, labelValueOf, parseInput } from "@agent-computer/core";
import type { ComputerRecord } from "@agent-computer/leases";
import { z } from "zod";
import type { ComputerLifecycle } from "./computer-lifecycle.js";
import type { ComputerOperations } from "./computer-operations.js";
import type { ReconcileOptions } from "./reconcile-options.js";
import type { ReconcileReport } from "./reconcile-report.js";

const optionsSchema = z.object({
  orphanGraceMs: z
    .number()
    .int()
    .nonnegative()
    .default(10 * 60_000),
  republishAfterMs: z.number().int().nonnegative().default(60_000),
  unrecordedGraceMs: z.number().int().nonnegative().default(60_000),
});

/**
 * One pass that brings the state store and the provider back in line:
 * interrupted operations are marked, missed enqueues republished, machines
 * of this deployment that no record owns destroyed after a grace period
 * (never while a reservation holds their computer), and records whose
 * machine is gone get their open stretch closed as `reconciled`, and a
 * running machine whose start no record shows (`list`'s `running` filter)
 * gets its stretch and run record opened (docs/architecture.md §9).
 */
export async function reconcileComputers(
  lifecycle: ComputerLifecycle,
  operations: ComputerOperations,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const { orphanGraceMs, republishAfterMs, unrecordedGraceMs } = parseInput(optionsSchema, options, "ReconcileOptions");
  const interrupted = await operations.markInterrupted();
  const republished = await operations.republishQueued(republishAfterMs);
  // List first, then read reservations: a machine in this list was made
  // before the list, so an operation that made it had reserved before too.
  const listed = await lifecycle.provider.list({ labels: lifecycle.deploymentLabels });
  const { records, held } = await recordsAndHeld(lifecycle, await operations.openComputerIds());
  const owned = await ownedMachines(lifecycle, records, held);
  const orphans = await destroyOrphans(
    lifecycle,
    listed.filter((ref) => !owned.has(ref)),
    orphanGraceMs,
  );
  const reconciled = await forgetGoneMachines(lifecycle, records, new Set(listed), held);
  const running = await lifecycle.provider.list({ labels: lifecycle.deploymentLabels, running: true });
  const recordedStarts = await recordUnrecordedStarts(lifecycle, records, new Set(running), held, unrecordedGraceMs);
  return { interrupted, republished, ...orphans, reconciled, recordedStarts };
}

/**
 * Opens the stretch of each computer whose machine runs although its record
 * shows no open stretch on it, or whose open stretch has no run record
 * (the two writes of a start, cut between them). Only after the machine was
 * seen so for `graceMs`: a worker bringing it up now writes the start
 * itself, and a record that moved meanwhile is left for the next pass.
 */
async function recordUnrecordedStarts(
  lifecycle: ComputerLifecycle,
  records: ComputerRecord[],
  running: Set<string>,
  held: Set<string>,
  graceMs: number,
): Promise<string[]> {
  const unrecorded: ComputerRecord[] = [];
  for (const record of records) {
    const ref = record.providerRef;
    if (!ref || record.providerKind !== lifecycle.providerKind || !running.has(ref) || held.has(record.computerId))
      continue;
    if (!(await lifecycle.startIsRecorded(record))) unrecorded.push(record);
  }
  const firstSeen = await lifecycle.ledger.sightUnrecordedStarts(unrecorded.map((r) => r.providerRef as string));
  const now = await lifecycle.ledger.now();
  const opened: string[] = [];
  for (const record of unrecorded) {
    const seen = firstSeen.get(record.providerRef as string) ?? now;
    if (now - seen < graceMs) continue;
    try {
      await lifecycle.recordNoticedStart(record, seen);
      opened.push(record.computerId);
    } catch (error) {
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
    }
  }
  return opened;
}

/** The deployment's records, and the computers a reservation or an open operation holds. */
async function recordsAndHeld(
  lifecycle: ComputerLifecycle,
  held: Set<string>,
): Promise<{ records: ComputerRecord[]; held: Set<string> }> {
  const records: ComputerRecord[] = [];
  for (const computerId of await lifecycle.ledger.computerIds()) {
    const record = await lifecycle.leases.getComputer(computerId);
    if (!record) {
      await lifecycle.ledger.removeComputer(computerId); // deleted elsewhere
      continue;
    }
    records.push(record);
    if (await lifecycle.leases.getReservation(computerId)) held.add(computerId);
  }
  return { records, held };
}

/**
 * The machines records name, and every machine of a held computer: a
 * reserved computer may hold a machine its record does not name yet (an
 * update between provisioning and switching).
 */
async function ownedMachines(
  lifecycle: ComputerLifecycle,
  records: ComputerRecord[],
  held: Set<string>,
): Promise<Set<string>> {
  const owned = new Set<string>(records.flatMap((r) => (r.providerRef ? [r.providerRef] : [])));
  for (const computerId of held)
    for (const ref of await machinesOfComputer(lifecycle, computerId, lifecycle.deploymentLabels)) owned.add(ref);
  return owned;
}

/** Destroys the orphans first seen at least `orphanGraceMs` ago; the others wait. */
async function destroyOrphans(
  lifecycle: ComputerLifecycle,
  orphans: ProviderRef[],
  orphanGraceMs: number,
): Promise<Pick<ReconcileReport, "destroyed" | "awaitingGrace">> {
  const firstSeen = await lifecycle.ledger.sightOrphans(orphans);
  const now = await lifecycle.ledger.now();
  const destroyed: string[] = [];
  const awaitingGrace: string[] = [];
  for (const ref of orphans) {
    if (now - (firstSeen.get(ref) ?? now) < orphanGraceMs) {
      awaitingGrace.push(ref);
      continue;
    }
    await destroy(lifecycle, ref);
    destroyed.push(ref);
  }
  return { destroyed, awaitingGrace };
}

/** Closes the open stretch of each record whose machine is no longer there as `reconciled`; returns their ids. */
async function forgetGoneMachines(
  lifecycle: ComputerLifecycle,
  records: ComputerRecord[],
  present: Set<string>,
  held: Set<string>,
): Promise<string[]> {
  const reconciled: string[] = [];
  for (const record of records) {
    const ref = record.providerRef;
    if (!ref || record.providerKind !== lifecycle.providerKind || present.has(ref) || held.has(record.computerId))
      continue;
    // Not under this deployment's labels: confirm by the computer's own
    // label, which also finds machines made before the deployment label.
    if ((await machinesOfComputer(lifecycle, record.computerId, {})).includes(ref as ProviderRef)) continue;
    try {
      await lifecycle.forgetGoneMachine(record);
      reconciled.push(record.computerId);
    } catch (error) {
      // The record moved since it was read (a run brought the computer up): the next pass looks again.
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
    }
  }
  return reconciled;
}

/**
 * The machines labelled with the computer's id (and `labels`). A provider
 * keeps `labelValueOf(id)` there where label values are short (Kubernetes)
 * or the id itself where they take anything (Docker); the two differ only
 * for ids that are not label values, and then both are asked.
 */
async function machinesOfComputer(
  lifecycle: ComputerLifecycle,
  computerId: string,
  labels: Record<string, string>,
): Promise<ProviderRef[]> {
  const found = new Set<ProviderRef>();
  for (const value of new Set([labelValueOf(computerId), computerId])) {
    const filter = { labels: { ...labels, [COMPUTER_LABELS.computerId]: value } };
    for (const ref of await lifecycle.provider.list(filter)) found.add(ref);
  }
  return [...found];
}

async function destroy(lifecycle: ComputerLifecycle, ref: ProviderRef): Promise<void> {
  // The contract destroys through a machine handle; reconnect may resume a
  // stopped orphan first, which is harmless since it is removed right away.
  const machine = await lifecycle.provider.reconnect(ref);
  if (machine !== "gone") await machine.destroy();
}
