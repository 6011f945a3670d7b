import { AgentComputerError } from "@agent-computer/core";
import type { Sandbox } from "e2b";

/** One event of envd's process stream, as the SDK's Connect client decodes it (bytes stay bytes). */
export interface ProcessEvent {
  event?: {
    event:
      | { case: "start"; value: { pid: number } }
      | {
          case: "data";
          value: { output: { case: "stdout" | "stderr" | "pty"; value: Uint8Array } | { case: undefined } };
        }
      | { case: "end"; value: { exitCode: number; exited: boolean; status: string; error?: string } }
      | { case: "keepalive"; value: object }
      | { case: undefined; value?: undefined };
  };
}

interface CallOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/**
 * envd's process service through the SDK's own Connect transport (its
 * fetch, its headers, its access token). `commands.run` hands output to
 * callbacks as decoded strings and gives the stream a 60 s deadline; this
 * client keeps bytes and sets no deadline, so the contract's own timeout
 * rules (docs/architecture.md §3). The SDK version is pinned: the field is
 * protected there.
 */
export interface ProcessRpc {
  start(
    request: {
      process: { cmd: string; args: string[]; envs: Record<string, string>; cwd?: string };
      stdin: boolean;
    },
    options: CallOptions,
  ): AsyncIterable<ProcessEvent>;
  sendInput(
    request: {
      process: { selector: { case: "pid"; value: number } };
      input: { input: { case: "stdin"; value: Uint8Array } };
    },
    options: CallOptions,
  ): Promise<unknown>;
  closeStdin(
    request: { process: { selector: { case: "pid"; value: number } } },
    options: CallOptions,
  ): Promise<unknown>;
}

export function processRpcOf(sandbox: Sandbox): ProcessRpc {
  const rpc = (sandbox.commands as unknown as { rpc?: ProcessRpc }).rpc;
  if (!rpc || typeof rpc.start !== "function") {
    throw new AgentComputerError(
      "UNSUPPORTED",
      "This e2b SDK has no process client where provider-e2b expects it; install the e2b version provider-e2b pins.",
    );
  }
  return rpc;
}

/** The headers `commands.run` sends: the user as Basic auth, and envd's keepalive pings. */
export function processHeaders(user: string): Record<string, string> {
  return {
    Authorization: `Basic ${Buffer.from(`${user}:`).toString("base64")}`,
    "Keepalive-Ping-Interval": "50",
  };
}
