import { randomUUID } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import { isTransientStatus, redactSecrets, retryWithin, statusOfFailure } from "@agent-computer/provider-kit";
import { z } from "zod";

// The Box service's HTTP API as this package uses it, in ONE file so that a
// wire shape found to be wrong is corrected here only. What is documented
// (paths, verbs, the `{ ok, type, ... }` envelope and its error shape,
// states, `noEnv`, `ttlSeconds`, the commands API and its 600 s cap, base64
// files, the delete confirmation header) is followed; what is not is a
// choice, listed under "Wire choices" in the README and marked CHOICE here.

/**
 * The service refuses a DELETE without its confirmation header (its value:
 * the box id, a CHOICE). Its name carries the vendor's, so this package
 * takes it as an option (`confirmDeleteHeader`, from the service's API
 * reference); this is the default the emulator accepts.
 */
export const DEFAULT_CONFIRM_DELETE_HEADER = "X-Confirm-Delete";
/** The documented cap of a synchronous command. */
export const MAX_COMMAND_SECONDS = 600;

/** States the API documents; unknown ones are kept as strings. */
export const BOX_READY_STATES = new Set(["ready", "idle", "running"]);
/** States a box does not come back from: the computer is replaced. */
export const BOX_GONE_STATES = new Set(["deleted", "cancelled"]);

const boxSchema = z
  .object({
    id: z.string().min(1),
    state: z.string().min(1),
    name: z.string().nullish(),
    createdAt: z.string().nullish(),
    ttlSeconds: z.number().nullish(),
    /** CHOICE: why a box is in "error" (the emulator says "unrecoverable"). */
    errorReason: z.string().nullish(),
  })
  .passthrough();
export type BoxRecord = z.infer<typeof boxSchema>;

const okEnvelope = z.object({ ok: z.literal(true), type: z.string() }).passthrough();
const boxAnswer = okEnvelope.extend({ box: boxSchema });
// CHOICE: list pages carry `boxes` and an opaque `nextCursor`.
const listAnswer = okEnvelope.extend({ boxes: z.array(boxSchema), nextCursor: z.string().nullish() });
const commandAnswer = okEnvelope.extend({
  exitCode: z.number().int().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean().default(false),
  stderrTruncated: z.boolean().default(false),
  timedOut: z.boolean().default(false),
  success: z.boolean().optional(),
});
export type BoxCommandResult = z.infer<typeof commandAnswer>;
// CHOICE: a detached command answers its `processId` at once.
const detachedAnswer = okEnvelope.extend({ processId: z.string().min(1) });
const statusAnswer = okEnvelope.extend({
  processId: z.string(),
  // CHOICE: "running" until the process ends, then "exited" with its code.
  status: z.string(),
  exitCode: z.number().int().nullish(),
  stdout: z.string().default(""),
  stderr: z.string().default(""),
});
export type BoxCommandStatus = z.infer<typeof statusAnswer>;
// CHOICE: named snapshots are `{ name, state }`, state "building" until "ready" (or "failed").
const snapshotSchema = z.object({ name: z.string().min(1), state: z.string().min(1) }).passthrough();
export type BoxNamedSnapshot = z.infer<typeof snapshotSchema>;
const snapshotListAnswer = okEnvelope.extend({ snapshots: z.array(snapshotSchema) });
const snapshotAnswer = okEnvelope.extend({ snapshot: snapshotSchema });
const fileAnswer = okEnvelope.extend({ path: z.string(), content: z.string(), encoding: z.string() });
const errorEnvelope = z
  .object({
    ok: z.literal(false),
    type: z.string().optional(),
    status: z.number().optional(),
    code: z.string().optional(),
    message: z.string().optional(),
    error: z.object({ code: z.string().optional(), message: z.string().optional() }).passthrough().optional(),
    requestId: z.string().optional(),
  })
  .passthrough();

export interface BoxClientOptions {
  apiKey: string;
  baseUrl: string;
  /** The header a DELETE carries to confirm it (see DEFAULT_CONFIRM_DELETE_HEADER). */
  confirmDeleteHeader: string;
  /** One HTTP request's deadline. */
  requestTimeoutMs: number;
  /** How long 429, 5xx and dropped connections are retried before UNAVAILABLE. */
  retryMs: number;
  /** Words that never reach an error message (the key, route tokens). */
  secrets: Set<string>;
}

export interface CreateBoxRequest {
  noEnv: true;
  ttlSeconds: number;
  /** A named snapshot to start from. */
  from?: string;
  env?: Record<string, string>;
}

interface RequestOptions {
  signal?: AbortSignal;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Retries of 429/5xx/no answer stop here (default: now + retryMs). */
  until?: number;
}

/**
 * The small client: bearer auth, zod-checked answers, the error envelope
 * turned into AgentComputerError (details: `status`, `code`, `requestId`).
 * 401/403 are UNAVAILABLE (not retryable; never "gone"), 404 and 410 are
 * PROVIDER_GONE, 409 CONFLICT, 429/5xx and a request without an answer are
 * retried until the deadline and then UNAVAILABLE (retryable).
 */
export class BoxClient {
  constructor(private readonly options: BoxClientOptions) {}

  async create(request: CreateBoxRequest, idempotencyKey: string, signal?: AbortSignal): Promise<BoxRecord> {
    const answer = await this.call("POST", "/boxes", boxAnswer, "create a box", {
      signal,
      body: request,
      headers: { "Idempotency-Key": idempotencyKey },
    });
    return answer.box;
  }

  async get(id: string, signal?: AbortSignal): Promise<BoxRecord> {
    return (await this.call("GET", `/boxes/${enc(id)}`, boxAnswer, "look up a box", { signal })).box;
  }

  /** Every box of the account, page by page. */
  async list(signal?: AbortSignal): Promise<BoxRecord[]> {
    const all: BoxRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.call("GET", "/boxes", listAnswer, "list boxes", {
        signal,
        query: { limit: 100, cursor },
      });
      all.push(...page.boxes);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }

  async update(id: string, change: { name?: string; ttlSeconds?: number }, signal?: AbortSignal): Promise<BoxRecord> {
    return (await this.call("PATCH", `/boxes/${enc(id)}`, boxAnswer, "update a box", { signal, body: change })).box;
  }

  /** Archives the box (memory is not kept). */
  async stop(id: string, signal?: AbortSignal): Promise<BoxRecord> {
    return (
      await this.call("POST", `/boxes/${enc(id)}/stop`, boxAnswer, "archive a box", { signal, body: { force: false } })
    ).box;
  }

  async resume(id: string, ttlSeconds: number, signal?: AbortSignal): Promise<BoxRecord> {
    return (
      await this.call("POST", `/boxes/${enc(id)}/resume`, boxAnswer, "resume a box", {
        signal,
        body: { noEnv: true, ttlSeconds },
      })
    ).box;
  }

  async delete(id: string, signal?: AbortSignal): Promise<void> {
    await this.call("DELETE", `/boxes/${enc(id)}`, okEnvelope, "delete a box", {
      signal,
      headers: { [this.options.confirmDeleteHeader]: id },
    });
  }

  /** A synchronous command (`sh -c` in the box, CHOICE), its output whole or truncated. */
  async command(
    id: string,
    request: { command: string; cwd?: string; timeoutSeconds?: number },
    signal?: AbortSignal,
  ): Promise<BoxCommandResult> {
    const timeoutSeconds = Math.min(MAX_COMMAND_SECONDS, request.timeoutSeconds ?? MAX_COMMAND_SECONDS);
    return this.call("POST", `/boxes/${enc(id)}/commands`, commandAnswer, "run a command", {
      signal,
      body: { ...request, timeoutSeconds, detached: false },
    });
  }

  /** Starts a command that outlives the request; its id is for `commandStatus`. */
  async detach(id: string, request: { command: string; cwd?: string }, signal?: AbortSignal): Promise<string> {
    const answer = await this.call("POST", `/boxes/${enc(id)}/commands`, detachedAnswer, "start a command", {
      signal,
      body: { ...request, detached: true },
    });
    return answer.processId;
  }

  async commandStatus(id: string, processId: string, tailBytes = 0, signal?: AbortSignal): Promise<BoxCommandStatus> {
    return this.call("GET", `/boxes/${enc(id)}/commands/${enc(processId)}`, statusAnswer, "look up a command", {
      signal,
      query: { tailBytes },
    });
  }

  async listNamedSnapshots(signal?: AbortSignal): Promise<BoxNamedSnapshot[]> {
    return (await this.call("GET", "/named-snapshots", snapshotListAnswer, "list named snapshots", { signal }))
      .snapshots;
  }

  /** CHOICE: `POST /boxes/{id}/snapshots { name }` starts a named snapshot of the box's disk. */
  async snapshot(id: string, name: string, signal?: AbortSignal): Promise<BoxNamedSnapshot> {
    return (
      await this.call("POST", `/boxes/${enc(id)}/snapshots`, snapshotAnswer, "snapshot a box", {
        signal,
        body: { name },
      })
    ).snapshot;
  }

  async writeFile(id: string, path: string, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
    await this.call("PUT", `/boxes/${enc(id)}/files`, okEnvelope, "write a file", {
      signal,
      body: { path, content: Buffer.from(bytes).toString("base64"), encoding: "base64" },
    });
  }

  async readFile(id: string, path: string, signal?: AbortSignal): Promise<Buffer> {
    const answer = await this.call("GET", `/boxes/${enc(id)}/files`, fileAnswer, "read a file", {
      signal,
      query: { path, encoding: "base64" },
    });
    return answer.encoding === "base64" ? Buffer.from(answer.content, "base64") : Buffer.from(answer.content, "utf8");
  }

  /** One call; 429, 5xx and no answer are tried again within the deadline (the kit's `retryWithin`). */
  private call<T extends z.ZodType>(
    method: string,
    path: string,
    schema: T,
    what: string,
    options: RequestOptions,
  ): Promise<z.output<T>> {
    const url = new URL(`${this.options.baseUrl.replace(/\/+$/, "")}${path}`);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return retryWithin(() => this.attempt(method, url, schema, what, options), {
      until: options.until ?? Date.now() + this.options.retryMs,
      signal: options.signal,
      isTransient: (error) => {
        const status = statusOfFailure(error);
        return status === 0 || isTransientStatus(status);
      },
      failure: (error) => error,
      firstDelayMs: 200,
    });
  }

  private async attempt<T extends z.ZodType>(
    method: string,
    url: URL,
    schema: T,
    what: string,
    options: RequestOptions,
  ): Promise<z.output<T>> {
    const signals = [AbortSignal.timeout(this.options.requestTimeoutMs)];
    if (options.signal) signals.push(options.signal);
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        signal: AbortSignal.any(signals),
        headers: {
          authorization: `Bearer ${this.options.apiKey}`,
          accept: "application/json",
          ...(options.body === undefined ? {} : { "content-type": "application/json" }),
          ...options.headers,
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      // No answer (refused, reset, our request deadline): nothing says the call did not happen.
      throw new AgentComputerError("UNAVAILABLE", `The Box API did not answer (${what}): ${nameOf(error)}.`, {
        details: { status: 0 },
      });
    }
    const text = await response.text().catch(() => "");
    const json = parseJson(text);
    if (!response.ok) throw this.failure(response.status, json, what);
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The Box API answered ${what} with an unexpected shape: ${this.redact(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "))}.`,
      { retryable: false, details: { status: response.status } },
    );
  }

  private failure(status: number, json: unknown, what: string): AgentComputerError {
    const envelope = errorEnvelope.safeParse(json);
    const body = envelope.success ? envelope.data : undefined;
    const code = body?.error?.code ?? body?.code;
    const message = this.redact(body?.error?.message ?? body?.message ?? `HTTP ${status}`).slice(0, 400);
    const details = { status, ...(code ? { code } : {}), ...(body?.requestId ? { requestId: body.requestId } : {}) };
    const said = `The Box API refused to ${what} (${status}${code ? ` ${code}` : ""}): ${message}`;
    if (status === 401 || status === 403) {
      return new AgentComputerError("UNAVAILABLE", `${said}. Check the API key.`, { retryable: false, details });
    }
    if (status === 404 || status === 410) return new AgentComputerError("PROVIDER_GONE", said, { details });
    if (status === 409) return new AgentComputerError("CONFLICT", said, { details });
    if (status === 429 || status >= 500) return new AgentComputerError("UNAVAILABLE", said, { details });
    return new AgentComputerError("UNAVAILABLE", said, { retryable: false, details });
  }

  /** Removes the key, route tokens and anything token-like from text the service sent. */
  redact(text: string): string {
    return redactSecrets(text, this.options.secrets);
  }
}

/** A fresh idempotency key for one create (kept across that create's retries). */
export function idempotencyKey(): string {
  return randomUUID();
}

function enc(part: string): string {
  return encodeURIComponent(part);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function nameOf(error: unknown): string {
  const e = error as { name?: string; cause?: { code?: string } };
  return e?.cause?.code ?? e?.name ?? "no answer";
}
