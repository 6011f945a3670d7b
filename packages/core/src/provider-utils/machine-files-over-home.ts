import type { Readable } from "node:stream";
import { z } from "zod";
import type { MachineFiles } from "../contract/machine-files.js";
import type { OpContext } from "../contract/op-context.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { parseInput } from "../validation/parse-input.js";
import { enterOperation } from "./enter-operation.js";
import type { HomeFiles } from "./home-files.js";

const readOptionsSchema = z.object({
  maxBytes: z.number().int().positive().optional(),
  length: z.number().int().nonnegative().optional(),
});
const listOptionsSchema = z.object({ limit: z.number().int().positive().optional() });

/** `MachineFiles.read` options, checked: INVALID_ARGUMENT for anything else. */
export function parseReadOptions(opts: unknown): { maxBytes?: number; length?: number } {
  return parseInput(readOptionsSchema, opts ?? {}, "read options");
}

/** `MachineFiles.list` options, checked: INVALID_ARGUMENT for anything else. */
export function parseListOptions(opts: unknown): { limit?: number } {
  return parseInput(listOptionsSchema, opts ?? {}, "list options");
}

/** What a machine supplies for `machineFilesOverHome`. */
export interface MachineFilesOverHomeOptions {
  /**
   * The home's files for one call, bound to its checked context so that the
   * call's abort and deadline reach whatever the home runs (helper commands
   * in the machine, for ExecHomeFiles).
   */
  home(context: OpContext, what: string): HomeFiles;
  /** The whole home as a tar stream; the context is checked and not yet done. */
  exportWorkspace(context: OpContext): Promise<Readable>;
  /** Replaces the home with `tar`; the context is checked and `tar` is a stream. */
  importWorkspace(tar: Readable, context: OpContext): Promise<void>;
}

/**
 * A machine's `files` over its home: every call's input and context are
 * checked here (bad read options and file data throw at once, as the
 * contract's other input errors do), then handed to the home or to the
 * machine's own export and import.
 */
export function machineFilesOverHome(options: MachineFilesOverHomeOptions): MachineFiles {
  const withHome = async <T>(ctx: OpContext | undefined, what: string, work: (home: HomeFiles) => Promise<T>) =>
    work(options.home(enterOperation(ctx, what), what));
  return {
    list: (path, ctx, opts) => {
      const checked = parseListOptions(opts);
      return withHome(ctx, "list files", (home) => home.list(path, checked));
    },
    read: (path, ctx, opts) => {
      const checked = parseReadOptions(opts);
      return withHome(ctx, "read a file", (home) => home.read(path, checked));
    },
    write: (path, data, ctx) => {
      if (!(data instanceof Uint8Array) && typeof (data as Readable | undefined)?.pipe !== "function") {
        throw new AgentComputerError("INVALID_ARGUMENT", "Invalid file data: expected a Uint8Array or a Readable.");
      }
      return withHome(ctx, "write a file", (home) => home.write(path, data));
    },
    exportWorkspace: async (ctx) => options.exportWorkspace(enterOperation(ctx, "workspace export")),
    importWorkspace: async (tar, ctx) => {
      const context = enterOperation(ctx, "workspace import");
      if (typeof tar?.pipe !== "function") {
        throw new AgentComputerError("INVALID_ARGUMENT", "Invalid workspace: expected a tar Readable.");
      }
      return options.importWorkspace(tar, context);
    },
  };
}
