import type { Readable } from "node:stream";
import type { ExecResult } from "@agent-computer/core";

/** Runs a helper script inside the machine as the computer's user. */
export type HomeScriptRunner = (
  argv: string[],
  options: { stdin?: Uint8Array | Readable; maxOutputBytes: number },
) => Promise<ExecResult>;
