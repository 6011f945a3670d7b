import type { Machine } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import type { ComputerRecord, ComputerScope } from "@agent-computer/leases";
import type { ModeChange } from "./bot-mode.js";
import type { ComputerLifecycle } from "./computer-lifecycle.js";
import type { ComputerSlot } from "./computer-slot.js";
import { copyFolder, isEmptyFolder } from "./copy-folder.js";
import { errorText } from "./operation-fields.js";
import type { StageRunner } from "./stage-runner.js";

/** What a Private home holds that is not the bot's work: the runtime's own folder and every browser profile. */
const NOT_WORK = [".agent-computer", ".browser-profiles"];

/**
 * A mode change's work (src/runtime/OPERATIONS.md, "Mode changes"), run
 * while the operation reserves both computers and holds both queues. The
 * bot's folder on the Team computer (`bots/<bot-id>/`) becomes the whole
 * home of its Private computer, and back; its browser profile
 * (`.browser-profiles/<bot-id>/`) goes with it. The source is saved first,
 * the target saved with the files before anything leaves the source, so a
 * failure up to then leaves the bot where it was (the target's copy
 * removed); the source's clean-up after that is a warning, never a loss.
 * Returns the warnings.
 */
export async function moveBot(
  lifecycle: ComputerLifecycle,
  stage: StageRunner,
  fromId: string,
  change: ModeChange,
): Promise<string[]> {
  const source = await lifecycle.leases.getComputer(fromId);
  if (!source) throw new AgentComputerError("NOT_FOUND", `Computer "${fromId}" was deleted.`);
  // A run may have made the Private computer between the request and now: its home is not this move's to fill.
  if (change.to === "private" && (await lifecycle.leases.getComputer(change.targetComputerId))) {
    throw new AgentComputerError(
      "CONFLICT",
      `Bot "${change.botId}" already has a Private computer; nothing was moved.`,
    );
  }
  const scope: ComputerScope = change.to === "private" ? { kind: "private", botId: change.botId } : { kind: "team" };
  // A Private computer made here belongs to the same user and space as the computer the bot leaves.
  lifecycle.slotOf(change.targetComputerId, scope, source.owner ?? { spaceId: change.workspaceId });
  return lifecycle.underOperation(fromId, (from) =>
    lifecycle.underOperation(change.targetComputerId, (to) =>
      new BotMove(lifecycle, stage, change, source).run(from, to),
    ),
  );
}

class BotMove {
  private readonly warnings: string[] = [];
  /** Set once files may have reached the target: only then is there a copy to undo on the Team computer. */
  private copyStarted = false;
  private readonly folder: string;
  private readonly profile: string;

  constructor(
    private readonly lifecycle: ComputerLifecycle,
    private readonly stage: StageRunner,
    private readonly change: ModeChange,
    private readonly source: ComputerRecord,
  ) {
    this.folder = `bots/${change.botId}`;
    this.profile = `.browser-profiles/${change.botId}`;
  }

  async run(from: ComputerSlot, to: ComputerSlot): Promise<string[]> {
    const fromMachine = await this.lifecycle.machineUnderOperation(from, this.stage);
    // Its browser must not write into the profile while it is copied.
    await this.lifecycle.screens.releaseKeptScreen(from, fromMachine, this.change.botId);
    await this.stage("checkpointing", async () => ({
      revision: await this.lifecycle.checkpointLive(from, fromMachine, "mode-change"),
    }));
    let toMachine: Machine | undefined;
    try {
      toMachine = await this.lifecycle.machineUnderOperation(to, this.stage);
      const target = toMachine;
      await this.stage("copying", () => this.copy(fromMachine, target));
      await this.stage("checkpointing-target", async () => ({
        revision: await this.lifecycle.checkpointLive(to, target, "mode-change"),
      }));
    } catch (error) {
      await this.undoCopy(to, toMachine);
      throw error;
    }
    await this.removeSource(from, fromMachine);
    return this.warnings;
  }

  /** The bot's folder and profile into the target; CONFLICT, copying nothing, when the Team computer has them already. */
  private async copy(from: Machine, to: Machine): Promise<Record<string, boolean>> {
    if (this.change.to === "private") {
      this.copyStarted = true;
      return {
        folder: await copyFolder(from, this.folder, to, "."),
        profile: await copyFolder(from, this.profile, to, this.profile),
      };
    }
    for (const dir of [this.folder, this.profile]) {
      if (await isEmptyFolder(to, dir)) continue;
      throw new AgentComputerError(
        "CONFLICT",
        `The Team computer already has "${dir}"; nothing was moved. Move or remove it there first.`,
        { details: { computerId: this.change.targetComputerId, path: dir } },
      );
    }
    this.copyStarted = true;
    return {
      folder: await copyFolder(from, ".", to, this.folder, NOT_WORK),
      profile: await copyFolder(from, this.profile, to, this.profile),
    };
  }

  /** A failed move leaves the target as it was: a Private computer made for it goes, copied folders on the Team computer go. */
  private async undoCopy(to: ComputerSlot, toMachine: Machine | undefined): Promise<void> {
    try {
      if (this.change.to === "private") {
        const record = await this.lifecycle.leases.getComputer(to.computerId);
        if (record) await this.lifecycle.removeUnderOperation(to, record);
      } else if (this.copyStarted) {
        // Both were missing or empty before the copy (checked first), so nothing of the team's goes.
        await toMachine?.exec({ argv: ["rm", "-rf", "--", this.folder, this.profile] });
      }
    } catch (error) {
      this.warnings.push(`Removing the partial copy on "${to.computerId}" failed (${errorText(error)}).`);
    }
  }

  /** After the target is saved: the Team computer loses the bot's files, or the Private computer goes. */
  private async removeSource(from: ComputerSlot, fromMachine: Machine): Promise<void> {
    try {
      await this.stage("removing-source", async () => {
        if (this.change.to === "team") {
          await this.lifecycle.removeUnderOperation(from, this.source);
          return { deleted: from.computerId };
        }
        const removed = await fromMachine.exec({ argv: ["rm", "-rf", "--", this.folder, this.profile] });
        if (removed.exitCode !== 0)
          throw new AgentComputerError("UNAVAILABLE", `Could not remove "${this.folder}" from "${from.computerId}".`);
        return { revision: await this.lifecycle.checkpointLive(from, fromMachine, "mode-change") };
      });
    } catch (error) {
      // The bot already works on its new computer, saved; the old copy is only in the way.
      this.warnings.push(
        `The bot moved, but its files could not be removed from "${from.computerId}" (${errorText(error)}); remove them there.`,
      );
    }
  }
}
