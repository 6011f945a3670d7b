import type { CreateosSandboxHttp } from "@nodeops-createos/sandbox";
import { z } from "zod";

// The managed-process API, which the TS SDK does not model (its
// COMPATIBILITY.md, "Endpoints not modeled") but the Go SDK does
// (NodeOps-app/createos-go-sdk sandbox/processes.go, structs/*.go). Sent
// through the TS SDK's transport (`client.http`: auth, JSend, errors);
// answers are read with these schemas, which keep only what this client
// needs and let other fields pass, so a field the service adds breaks
// nothing.

/** responses.go ManagedProcess, the fields read here. */
const managedProcess = z.looseObject({
  process_id: z.string(),
  state: z.string(),
  exit_code: z.number().int().optional().nullable(),
  signal: z.string().optional().nullable(),
  leader_exited: z.boolean().optional(),
  tree_exited: z.boolean().optional(),
});
export type ManagedProcess = z.output<typeof managedProcess>;

/**
 * responses.go ManagedProcessConnectFrame. `seq` is optional there
 * (`omitempty`); a data frame without one is counted here so a
 * reconnect asks from the right place.
 */
const connectFrame = z.looseObject({
  type: z.string(),
  seq: z.number().int().optional(),
  stream: z.string().optional(),
  data_base64: z.string().optional(),
  exit_code: z.number().int().optional().nullable(),
  signal: z.string().optional().nullable(),
  error: z.string().optional(),
});
export type ConnectFrame = z.output<typeof connectFrame>;

/** What starts a managed process (requests.go ManagedProcessCreateRequest; pipes, no `pty`). */
export interface ProcessStart {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
}

/**
 * A sandbox's managed processes: create, input, stdin close, the
 * replayable output stream and delete (processes.go Create, InputBytes,
 * CloseStandardInput, Connect, Delete).
 */
export class ManagedProcesses {
  constructor(
    private readonly http: CreateosSandboxHttp,
    private readonly sandboxId: string,
  ) {}

  private path(processId?: string, suffix = ""): string {
    const base = `/v1/sandboxes/${encodeURIComponent(this.sandboxId)}/processes`;
    return processId === undefined ? base : `${base}/${encodeURIComponent(processId)}${suffix}`;
  }

  /** processes.go Create: argv without a shell, its `env` added to the process's environment. */
  async start(start: ProcessStart, signal: AbortSignal): Promise<ManagedProcess> {
    const [cmd, ...args] = start.argv as [string, ...string[]];
    const body = { cmd, ...(args.length ? { args } : {}), cwd: start.cwd, env: start.env };
    return managedProcess.parse(await this.http.request("POST", this.path(), { body, signal, retry: false }));
  }

  /** processes.go InputBytes: bytes as `data_base64`. */
  async input(processId: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    const body = { data_base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") };
    await this.http.request("POST", this.path(processId, "/input"), { body, signal, retry: false });
  }

  /** processes.go CloseStandardInput. */
  async closeStdin(processId: string, signal: AbortSignal): Promise<void> {
    await this.http.request("POST", this.path(processId, "/stdin/close"), { signal });
  }

  /**
   * processes.go Connect: the output after sequence `after`, then live,
   * as NDJSON. A client disconnect does not end the process
   * (COMPATIBILITY.md), so a cut stream is opened again from the last
   * sequence seen.
   */
  async *connect(processId: string, after: number, signal: AbortSignal): AsyncGenerator<ConnectFrame> {
    const frames = this.http.stream<unknown>("GET", this.path(processId, "/connect"), {
      query: { after },
      signal,
      // The stream lives as long as the command: no per-request deadline.
      timeoutMs: 0,
    });
    for await (const frame of frames) yield connectFrame.parse(frame);
  }

  /** processes.go Get. */
  async get(processId: string, signal: AbortSignal): Promise<ManagedProcess> {
    return managedProcess.parse(await this.http.request("GET", this.path(processId), { signal }));
  }

  /** processes.go Delete: terminates the whole process tree (`grace_ms` before the kill). */
  async remove(processId: string, graceMs: number, signal: AbortSignal): Promise<void> {
    await this.http.request("DELETE", this.path(processId), { query: { grace_ms: graceMs }, signal });
  }
}
