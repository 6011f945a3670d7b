import type { Readable } from "node:stream";
import type { ExecResult } from "../contract/exec-result.js";

/** Runs a helper script inside the machine as the computer's user. */
export type HomeScriptRunner = (
  argv: string[],
  options: { stdin?: Uint8Array | Readable; maxOutputBytes: number },
) => Promise<ExecResult>;
