import { randomUUID } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import { isTransientStatus, redactSecrets, retryWithin, serviceFailure } from "@agent-computer/provider-kit";
import type { z } from "zod";
import {
  actionAnswer,
  type BoatCommandResult,
  type BoatCommandStatus,
  type BoatNamedSnapshot,
  type BoatSandbox,
  commandAnswer,
  deletionAnswer,
  errorEnvelope,
  fileAnswer,
  hostAnswer,
  listAnswer,
  namedSnapshotAnswer,
  okEnvelope,
  sandboxAnswer,
  startedAnswer,
  statusAnswer,
} from "./boat-answers.js";

// Boat's public API (boat-v1.yaml in OpenAgentsInc/openagents,
// crates/boat/schema/) as this package uses it, in ONE file. Each method
// names the definition's operation (`op:<operationId>`); the answers'
// schemas are in boat-answers.ts, tolerant where the definition and the
// legacy Box API differ (see the README's "What the client tolerates").

/** The service's base (boat-v1.yaml `servers`). */
export const BOAT_API_URL = "https://boat.dev/api/v1";
/** The base before the rename; it still answers, with `/boxes` paths. */
export const LEGACY_BOX_API_URL = "https://ascii.dev/api/box/v1";
/** op:deleteSandbox: the header must name the sandbox, else 409 and nothing is deleted. */
export const CONFIRM_DELETE_HEADER = "X-Ascii-Confirm-Delete";
/** op:command: `timeoutSeconds` is an integer 1..600. */
export const MAX_COMMAND_SECONDS = 600;

/** Sandbox states a machine works in (Sandbox.state; the SDK's ready set). */
export const BOAT_READY_STATES = new Set(["ready", "idle", "running"]);
/** States on the way to ready: a create, resume or fork under way. */
export const BOAT_STARTING_STATES = new Set(["init", "provisioning", "provisioned", "cloning"]);
/**
 * States a sandbox does not come back from: `cancelled` (a start that got
 * no machine, reported once, then 404). A deleted sandbox answers 404.
 */
export const BOAT_GONE_STATES = new Set(["cancelled"]);

/** Which API the base speaks: Boat's `/sandboxes`, or the legacy Box base's `/boxes`. */
export type BoatApiFlavour = "boat" | "box";

export interface BoatClientOptions {
  apiKey: string;
  baseUrl: string;
  /** Paths and keys of the API (default: `box` for a base ending in `/box/v1`, else `boat`). */
  flavour?: BoatApiFlavour;
  /** One HTTP request's deadline. */
  requestTimeoutMs: number;
  /** How long a call that may be sent again is retried before UNAVAILABLE. */
  retryMs: number;
  /** Words that never reach an error message (the key, route tokens). */
  secrets: Set<string>;
}

/** op:create's body as this package sends it (CreateSandboxRequest). */
export interface CreateSandboxRequest {
  noEnv: true;
  ttlSeconds: number | null;
  /** A named snapshot to start from. */
  from?: string;
  env?: Record<string, string>;
}

interface RequestOptions {
  signal?: AbortSignal;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /**
   * Which failures are sent again within `retryMs`: `reads` (no answer,
   * 429, 5xx: the call changes nothing), `refused` (429 and 503, which
   * the definition says started nothing), or `never`.
   */
  resend: "reads" | "refused" | "never";
  /** What a 404 means: the sandbox the call is about is gone (default), or the thing asked for is not there. */
  missing?: "gone" | "not-found";
  /** Also sent again: 409s with these codes (op:create's `idempotency_in_progress`, op:command's `boat_starting`). */
  waitOut?: readonly string[];
}

/**
 * The small client: bearer auth, answers checked against the definition's
 * shapes, the error envelope turned into AgentComputerError through the
 * kit's `serviceFailure` (details: `status`, `code`, `requestId`).
 */
export class BoatClient {
  private readonly flavour: BoatApiFlavour;

  constructor(private readonly options: BoatClientOptions) {
    this.flavour = options.flavour ?? (/\/box\/v1\/?$/.test(options.baseUrl) ? "box" : "boat");
  }

  private sandboxPath(id?: string, ...rest: string[]): string {
    const collection = this.flavour === "box" ? "/boxes" : "/sandboxes";
    return [collection, ...(id === undefined ? [] : [enc(id)]), ...rest].join("/");
  }

  /** op:create. One idempotency key for the create and its retries: a lost answer gives the same sandbox again. */
  async create(request: CreateSandboxRequest, idempotencyKey: string, signal?: AbortSignal): Promise<BoatSandbox> {
    return this.call("POST", this.sandboxPath(), sandboxAnswer, "create a sandbox", {
      signal,
      body: request,
      headers: { "Idempotency-Key": idempotencyKey },
      resend: "reads",
      waitOut: ["idempotency_in_progress"],
    });
  }

  /** op:get. */
  get(id: string, signal?: AbortSignal): Promise<BoatSandbox> {
    return this.call("GET", this.sandboxPath(id), sandboxAnswer, "look up a sandbox", { signal, resend: "reads" });
  }

  /** op:sandboxes, every page (`pageInfo.nextCursor`), oldest first. */
  async list(signal?: AbortSignal): Promise<BoatSandbox[]> {
    const all: BoatSandbox[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await this.call("GET", this.sandboxPath(), listAnswer, "list sandboxes", {
        signal,
        query: { limit: 200, sort: "asc", cursor },
        resend: "reads",
      });
      all.push(...page.sandboxes);
      // A cursor the service did not take restarts at page one (sandboxes.badCursor): never loop on it.
      if (page.nextCursor && seen.has(page.nextCursor)) break;
      if (page.nextCursor) seen.add(page.nextCursor);
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  }

  /** op:update: a name (1..120 characters) or the lifetime (`ttlSeconds`, null: no auto-stop). */
  update(id: string, change: { name?: string; ttlSeconds?: number | null }, signal?: AbortSignal) {
    return this.call("PATCH", this.sandboxPath(id), sandboxAnswer, "update a sandbox", {
      signal,
      body: change,
      resend: "reads",
    });
  }

  /** op:stop: archives the sandbox after saving its disk (memory is not kept). */
  async stop(id: string, signal?: AbortSignal): Promise<void> {
    await this.call("POST", this.sandboxPath(id, "stop"), actionAnswer, "stop a sandbox", {
      signal,
      body: { force: false },
      resend: "refused",
    });
  }

  /** op:resume onto a fresh machine, `noEnv` again, with the lifetime given. */
  async resume(id: string, ttlSeconds: number | null, signal?: AbortSignal): Promise<void> {
    await this.call("POST", this.sandboxPath(id, "resume"), actionAnswer, "resume a sandbox", {
      signal,
      body: { noEnv: true, ttlSeconds },
      resend: "refused",
    });
  }

  /**
   * op:deleteSandbox with the confirmation header, then
   * op:getDeletionOperation until `completed` (the target leaves lists at
   * once; the machine goes in the background). A `blocked` deletion is
   * UNAVAILABLE; an answer without an operation (the legacy base) is taken
   * as accepted once the sandbox answers 404.
   */
  async delete(id: string, signal?: AbortSignal, waitMs = 60_000): Promise<void> {
    const answer = await this.call("DELETE", this.sandboxPath(id), deletionAnswer, "delete a sandbox", {
      signal,
      headers: { [CONFIRM_DELETE_HEADER]: id },
      resend: "reads",
    });
    const until = Date.now() + waitMs;
    let operation = answer.operation;
    while (Date.now() < until) {
      if (!operation) {
        const gone = await this.get(id, signal).then(
          () => false,
          (error) => AgentComputerError.is(error, "PROVIDER_GONE"),
        );
        if (gone) return;
      } else if (operation.status === "completed") {
        return;
      } else if (operation.status === "blocked") {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The deletion of ${id} is blocked (${operation.stage ?? "no stage"}).`,
          {
            retryable: false,
            details: { operation: operation.id },
          },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      if (operation) operation = await this.deletion(operation.id, signal);
    }
    // Accepted and out of every list: the service finishes it; the caller need not wait longer.
  }

  private async deletion(operationId: string, signal?: AbortSignal) {
    const answer = await this.call(
      "GET",
      `/deletion-operations/${enc(operationId)}`,
      deletionAnswer,
      "follow a deletion",
      {
        signal,
        resend: "reads",
        missing: "not-found",
      },
    );
    return answer.operation;
  }

  /**
   * op:command, synchronous (sh in the work directory; no `cwd` sent).
   * `idempotent`: the line may run twice without harm, so an answer that
   * never came (or 502 `boat_direct_failed`, "it may already run") is sent
   * again; otherwise it never is (the definition: commands are not retried).
   */
  command(id: string, line: string, options: { timeoutSeconds?: number; idempotent: boolean; signal?: AbortSignal }) {
    const timeoutSeconds = Math.max(
      1,
      Math.min(MAX_COMMAND_SECONDS, Math.ceil(options.timeoutSeconds ?? MAX_COMMAND_SECONDS)),
    );
    return this.call("POST", this.sandboxPath(id, "commands"), commandAnswer, "run a command", {
      signal: options.signal,
      body: { command: line, timeoutSeconds },
      resend: options.idempotent ? "reads" : "refused",
      waitOut: ["boat_starting", "box_starting"],
    }) as Promise<BoatCommandResult>;
  }

  /** op:command, detached: answers the integer `processId` for op:commandStatus. See `command` for `idempotent`. */
  async detach(id: string, line: string, options: { idempotent: boolean; signal?: AbortSignal }): Promise<number> {
    const answer = await this.call("POST", this.sandboxPath(id, "commands"), startedAnswer, "start a command", {
      signal: options.signal,
      body: { command: line, detached: true },
      resend: options.idempotent ? "reads" : "refused",
      waitOut: ["boat_starting", "box_starting"],
    });
    return answer.processId;
  }

  /** op:commandStatus with the last `tailBytes` (1..8 MiB) of each log. */
  commandStatus(id: string, processId: number, tailBytes = 1, signal?: AbortSignal): Promise<BoatCommandStatus> {
    return this.call("GET", this.sandboxPath(id, "commands", String(processId)), statusAnswer, "look up a command", {
      signal,
      query: { tailBytes: Math.max(1, Math.min(8_388_608, tailBytes)) },
      resend: "reads",
    });
  }

  /** op:hostPort: the port's stable route; private (`_token` in the URL) unless `public`. Idempotent per port. */
  async hostPort(id: string, port: number, signal?: AbortSignal): Promise<string> {
    const answer = await this.call("POST", this.sandboxPath(id, "host"), hostAnswer, "host a port", {
      signal,
      body: { port, public: false },
      resend: "reads",
    });
    return answer.url;
  }

  /** op:getNamedSnapshot; undefined when there is none of that name. */
  async namedSnapshot(name: string, signal?: AbortSignal): Promise<BoatNamedSnapshot | undefined> {
    try {
      return await this.call("GET", `/named-snapshots/${enc(name)}`, namedSnapshotAnswer, "look up a named snapshot", {
        signal,
        resend: "reads",
        missing: "not-found",
      });
    } catch (error) {
      if (AgentComputerError.is(error, "NOT_FOUND")) return undefined;
      throw error;
    }
  }

  /** op:saveNamedSnapshot: saves the sandbox's disk under `name` (status `saving`, then `ready` or `failed`). */
  saveNamedSnapshot(sandboxId: string, name: string, signal?: AbortSignal): Promise<BoatNamedSnapshot> {
    const body = this.flavour === "box" ? { boxId: sandboxId, name } : { sandboxId, name };
    return this.call("POST", "/named-snapshots", namedSnapshotAnswer, "save a named snapshot", {
      signal,
      body,
      resend: "refused",
      missing: "not-found",
    });
  }

  /** op:writeFile; the path must resolve under /home/user or /tmp. */
  async writeFile(id: string, path: string, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
    await this.call("PUT", this.sandboxPath(id, "files"), okEnvelope, "write a file", {
      signal,
      body: { path, content: Buffer.from(bytes).toString("base64"), encoding: "base64" },
      resend: "reads",
    });
  }

  /** op:readFile; the path must resolve under /home/user or /tmp. */
  async readFile(id: string, path: string, signal?: AbortSignal): Promise<Buffer> {
    const answer = await this.call("GET", this.sandboxPath(id, "files"), fileAnswer, "read a file", {
      signal,
      query: { path, encoding: "base64" },
      resend: "reads",
    });
    return Buffer.from(answer.content, answer.encoding === "utf8" ? "utf8" : "base64");
  }

  /** Removes the key, route tokens and anything token-like from text the service sent. */
  redact(text: string): string {
    return redactSecrets(text, this.options.secrets);
  }

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
      until: Date.now() + this.options.retryMs,
      signal: options.signal,
      isTransient: (error) => sentAgain(error, options),
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
        redirect: "error",
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
      throw this.failure(what, undefined, options, { detail: nameOf(error) });
    }
    const json = parseJson(await response.text().catch(() => ""));
    if (!response.ok) {
      const body = errorEnvelope.safeParse(json);
      const error = body.success ? body.data : undefined;
      const code = error?.error?.code ?? error?.code;
      return Promise.reject(
        this.failure(what, response.status, options, {
          detail: [code, error?.error?.message ?? error?.message].filter(Boolean).join(": "),
          details: { ...(code ? { code } : {}), ...(error?.requestId ? { requestId: error.requestId } : {}) },
        }),
      );
    }
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The Boat API answered ${what} with an unexpected shape: ${this.redact(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "))}.`,
      { retryable: false, details: { status: response.status } },
    );
  }

  private failure(
    what: string,
    status: number | undefined,
    options: RequestOptions,
    extra: { detail?: string; details?: Record<string, unknown> },
  ) {
    return serviceFailure({
      service: "The Boat API",
      what,
      status,
      ...extra,
      missingMeans: options.missing ?? "gone",
      secrets: this.options.secrets,
    });
  }
}

/** Whether a failed call goes again, by its resend class (RequestOptions.resend). */
function sentAgain(error: unknown, options: RequestOptions): boolean {
  if (!AgentComputerError.is(error)) return false;
  const status = error.details?.status as number | undefined;
  const code = error.details?.code as string | undefined;
  if (status === 409) return code !== undefined && (options.waitOut ?? []).includes(code);
  if (options.resend === "never") return false;
  if (options.resend === "refused") return status === 429 || status === 503;
  return error.code === "UNAVAILABLE" && (status === undefined || isTransientStatus(status));
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
