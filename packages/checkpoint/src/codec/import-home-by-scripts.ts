import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import { HOME_TRANSFER_EXIT, HOME_TRANSFER_SCRIPTS } from "./home-transfer-scripts.js";
import { packHome } from "./pack-home.js";
import { stageHome } from "./restore-home.js";

/** What a transfer script in the machine gave back. */
export interface TransferScriptResult {
  /** null when the script was killed. */
  readonly exitCode: number | null;
  readonly stderr: Uint8Array;
}

/** What a provider whose home is a folder inside the machine gives the shared import. */
export interface ScriptedHomeImport {
  readonly workspacePath: string;
  /** The machine's ref, for messages. */
  readonly ref: string;
  /** "the box", "the sandbox", "the pod": who could not unpack or swap, in messages. */
  readonly machineName: string;
  readonly signal: AbortSignal;
  /** Where the checked tree is staged on this host (default: the OS temp folder). */
  readonly stagingRoot?: string;
  /**
   * Gets the checked archive into the machine and runs step 1 there with
   * (home, tag): `stageHome` with the archive on stdin, or
   * `stageHomeFromFile` after uploading it as a file beside the home.
   */
  stage(archive: Readable, tag: string): Promise<TransferScriptResult>;
  /** Runs `sh -c <script> <name> ...args` in the machine under `signal`. */
  run(script: string, name: string, args: string[], signal: AbortSignal): Promise<TransferScriptResult>;
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8").trim();

/**
 * Replaces a machine's home whole with `tar` (docs/architecture.md §8): the
 * archive passes the restore checks on this host first (`stageHome`: relative
 * paths, folders and regular files only, the limits), the checked tree is
 * packed again and unpacked beside the home, and swapped in only once the
 * machine holds every file, folder and byte sent. Anything short of that
 * leaves the home as it was and the staging folder removed.
 */
export async function importHomeByScripts(
  tar: Readable,
  io: ScriptedHomeImport,
): Promise<{ files: number; bytes: number }> {
  const { signal } = io;
  const work = await mkdtemp(join(io.stagingRoot ?? tmpdir(), "agent-computer-import-"));
  const tag = randomBytes(6).toString("hex");
  try {
    const staged = await stageHome(tar, join(work, "home")).catch((error: unknown) => {
      throw signal.aborted ? signal.reason : error;
    });
    const packed = packHome(staged.stagingDir);
    try {
      const extracted = await io.stage(packed.tar, tag);
      if (extracted.exitCode !== 0) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `${capitalised(io.machineName)} could not unpack the home (exit ${extracted.exitCode}): ${text(extracted.stderr) || "no message"}. The home is as it was.`,
          { retryable: false },
        );
      }
      const stats = await packed.stats;
      const counts = [String(stats.files), String(stats.directories), String(stats.bytes)];
      const swapped = await io.run(
        HOME_TRANSFER_SCRIPTS.swapHome,
        "swap-home",
        [io.workspacePath, tag, ...counts],
        signal,
      );
      if (swapped.exitCode === HOME_TRANSFER_EXIT.incomplete) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The home arrived incomplete in ${io.ref} (${text(swapped.stderr)}); nothing was replaced, try again.`,
        );
      }
      if (swapped.exitCode !== 0) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `${capitalised(io.machineName)} could not swap in the imported home (exit ${swapped.exitCode}): ${text(swapped.stderr) || "no message"}.`,
          { retryable: false },
        );
      }
      return { files: stats.files, bytes: stats.bytes };
    } catch (error) {
      packed.tar.destroy();
      // Under a signal of its own: the call's may be what ended it.
      await io
        .run(
          HOME_TRANSFER_SCRIPTS.discardStaging,
          "discard-staging",
          [io.workspacePath, tag],
          AbortSignal.timeout(10_000),
        )
        .catch(() => {});
      throw error;
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const capitalised = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);
