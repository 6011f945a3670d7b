import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AgentComputerError, botIdSchema, computerIdSchema, parseInput } from "@agent-computer/core";
import type { ComputerScope, Lease } from "@agent-computer/leases";
import { z } from "zod";
import { CapabilitySeal } from "../capability/capability-seal.js";
import { issueScreenSchema } from "../capability/issue-request-schema.js";
import { botFolderOf } from "./bot-folder-of.js";
import type { Files } from "./files.js";
import type { FilesCapability } from "./files-capability.js";
import { FilesOperations } from "./files-operations.js";
import type { FilesOptions } from "./files-options.js";
import { filesPage } from "./files-page.js";
import type { FilesPolicy } from "./files-policy.js";
import type { IssueFilesCapabilityRequest } from "./issue-files-capability-request.js";

const SEAL_LABEL = "agent-computer/screens files capability";
const ATTACH_MAX_BYTES = 10 * 1024 * 1024;

const optionsSchema = z.object({
  runtime: z.custom<FilesOptions["runtime"]>(
    (v) => typeof (v as FilesOptions["runtime"])?.runningMachine === "function",
    { message: "expected a runtime with runningMachine and leases" },
  ),
  homeStore: z.custom<FilesOptions["homeStore"]>((v) => typeof (v as FilesOptions["homeStore"])?.list === "function", {
    message: "expected an AgentHomeStore (list and read)",
  }),
  secret: z.custom<Uint8Array>((v) => v instanceof Uint8Array && v.length === 32, {
    message: "expected 32 bytes (a Uint8Array or Buffer)",
  }),
  publicPath: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)+$/, "expected a path like /files: no trailing slash, no encoded characters")
    .refine((v) => !v.split("/").includes(".."), "expected no .. segment")
    .optional(),
  uploadMaxBytes: z.number().int().positive().optional(),
  previewMaxBytes: z
    .number()
    .int()
    .positive()
    .max(16 * 1024 * 1024)
    .optional(),
  uploadFolders: z
    .custom<(botId: string, scope: ComputerScope) => readonly string[]>((v) => typeof v === "function")
    .optional(),
  refreshMs: z.number().int().min(250).optional(),
  onActivity: z.custom<NonNullable<FilesOptions["onActivity"]>>((v) => typeof v === "function").optional(),
  frameAncestors: z
    .string()
    .regex(/^[^;,\r\n]+$/, "expected CSP sources without ; or ,")
    .optional(),
  clock: z.custom<() => number>((v) => typeof v === "function").optional(),
});

/** What a files capability's sealed blob holds; the lease stays in this process. */
const sealedSchema = z.object({
  id: z.string().min(1).max(128),
  computerId: computerIdSchema,
  botId: botIdSchema,
  mode: z.enum(["view", "control"]),
  expiresAt: z.number().nonnegative(),
});
type Sealed = z.infer<typeof sealedSchema>;

const STATUS: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  NOT_FOUND: 404,
  CONFLICT: 409,
  FENCED_OUT: 403,
  LEASE_LOST: 403,
  LEASE_HELD: 403,
  LIMIT_EXCEEDED: 413,
  ABORTED: 400,
  UNSUPPORTED: 501,
  CHECKPOINT_CORRUPT: 500,
  TIMEOUT: 504,
};

/**
 * A person's Files window: sealed capabilities and the HTTP API and page
 * an app mounts beside its screens (see README, "Files").
 */
export function createFiles(options: FilesOptions): Files {
  return new FilesHost(parseInput(optionsSchema, options, "FilesOptions") as FilesOptions);
}

/** One issued capability, as this process remembers it. */
interface Issued {
  readonly policy: FilesPolicy;
  readonly mode: "view" | "control";
  readonly expiresAt: number;
  control: Lease | undefined;
  revoked: boolean;
}

class FilesHost implements Files {
  readonly publicPath: string;
  readonly pagePath: string;
  private readonly seal: CapabilitySeal;
  private readonly operations: FilesOperations;
  private readonly issued = new Map<string, Issued>();
  private readonly streams = new Set<{ capabilityId: string; computerId: string; response: ServerResponse }>();
  private readonly page: { html: string; contentSecurityPolicy: string };
  private readonly clock: () => number;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly options: FilesOptions) {
    this.publicPath = options.publicPath ?? "/files";
    this.pagePath = `${this.publicPath}/page`;
    this.seal = new CapabilitySeal(options.secret, SEAL_LABEL);
    this.clock = options.clock ?? Date.now;
    this.operations = new FilesOperations({
      runtime: options.runtime,
      homeStore: options.homeStore,
      previewMaxBytes: options.previewMaxBytes ?? 256 * 1024,
      uploadMaxBytes: options.uploadMaxBytes ?? ATTACH_MAX_BYTES,
      uploadFolders: options.uploadFolders ?? botFolderOf,
      onActivity: options.onActivity,
      clock: this.clock,
    });
    this.page = filesPage({
      publicPath: this.publicPath,
      refreshMs: options.refreshMs ?? 3000,
      frameAncestors: options.frameAncestors ?? "'self'",
    });
    // Proxies close idle streams; a comment line every 15 s keeps them open.
    this.heartbeat = setInterval(() => {
      for (const s of this.streams) s.response.write(": ping\n\n");
    }, 15_000);
    this.heartbeat.unref();
  }

  async issueFilesCapability(request: IssueFilesCapabilityRequest): Promise<FilesCapability> {
    const input = parseInput(issueScreenSchema, request, "IssueFilesCapabilityRequest");
    if (!(await this.options.runtime.leases.getComputer(input.computerId)))
      throw new AgentComputerError("NOT_FOUND", `Computer "${input.computerId}" does not exist; a bot's run makes it.`);
    const id = randomUUID();
    const expiresAt = this.clock() + input.ttlMs;
    const policy = { computerId: input.computerId, botId: input.botId };
    const token = this.seal.seal({ id, ...policy, mode: input.mode, expiresAt } satisfies Sealed);
    this.issued.set(id, { policy, mode: input.mode, expiresAt, control: request.control, revoked: false });
    return { id, mode: input.mode, token, pageUrl: `${this.pagePath}#c=${token}&mode=${input.mode}`, expiresAt };
  }

  revoke(capabilityIdOrUrl: string): void {
    const token = capabilityIdOrUrl.match(/[#&]c=([A-Za-z0-9_-]+)/)?.[1] ?? capabilityIdOrUrl;
    const id = this.seal.openAs(token, sealedSchema)?.id ?? capabilityIdOrUrl;
    const issued = this.issued.get(id);
    if (issued) issued.revoked = true;
    // Its page's event stream says so and ends: a "refresh" sent after
    // this would only make the page ask again with a dead capability (a
    // 401), and so would a page that reconnects to a stream that ended.
    for (const s of this.streams)
      if (s.capabilityId === id) {
        this.streams.delete(s);
        s.response.end("data: closed\n\n");
      }
  }

  updateControl(lease: Lease): number {
    let backed = 0;
    for (const issued of this.issued.values())
      if (issued.control?.key === lease.key && issued.control.token === lease.token) {
        issued.control = lease;
        backed++;
      }
    return backed;
  }

  notify(event: { computerId: string }): void {
    for (const s of this.streams) if (s.computerId === event.computerId) s.response.write("data: refresh\n\n");
  }

  handleRequest(request: IncomingMessage, response: ServerResponse): boolean {
    const url = new URL(request.url ?? "/", "http://files");
    if (url.pathname !== this.publicPath && !url.pathname.startsWith(`${this.publicPath}/`)) return false;
    const rest = url.pathname.slice(this.publicPath.length);
    if (rest === "/page" && (request.method === "GET" || request.method === "HEAD")) this.sendPage(response);
    else if (rest.startsWith("/api/"))
      this.answer(rest.slice(5), url, request, response).catch((error) => this.fail(response, error));
    else sendJson(response, 404, { code: "NOT_FOUND", message: "No such files route." });
    return true;
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const s of this.streams) s.response.end();
    this.streams.clear();
  }

  private async answer(op: string, url: URL, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { id, issued } = this.capabilityOf(request);
    const path = url.searchParams.get("path") ?? "";
    const { policy } = issued;
    const method = request.method ?? "GET";
    if (op === "upload" && (method === "PUT" || method === "POST")) {
      if (issued.mode !== "control" || issued.control === undefined)
        throw new AgentComputerError("FENCED_OUT", "Uploading needs control of this bot's screen; take over first.");
      const declared = request.headers["content-length"];
      const saved = await this.operations.upload(
        policy,
        issued.control,
        path,
        request,
        declared === undefined ? undefined : Number(declared),
      );
      return sendJson(response, 201, saved);
    }
    if (method !== "GET") throw new AgentComputerError("INVALID_ARGUMENT", `${method} is not allowed on ${op}.`);
    if (op === "home")
      return sendJson(response, 200, {
        botId: policy.botId,
        mode: issued.mode,
        folder: await this.operations.homeFolderOf(policy),
      });
    if (op === "list") return sendJson(response, 200, await this.operations.list(policy, path));
    if (op === "preview") return sendJson(response, 200, await this.operations.preview(policy, path));
    if (op === "download") return this.download(policy, path, response);
    if (op === "events") return this.follow(id, policy, response);
    throw new AgentComputerError("NOT_FOUND", `No files operation "${op}".`);
  }

  private async download(policy: FilesPolicy, path: string, response: ServerResponse): Promise<void> {
    const gone = new AbortController();
    response.once("close", () => {
      if (!response.writableFinished) gone.abort(new AgentComputerError("ABORTED", "The browser went away."));
    });
    await this.operations
      .download(policy, path, {
        begin: (name) =>
          response.writeHead(200, {
            "Content-Type": "application/octet-stream",
            "Content-Disposition": `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
          }),
        write: (chunk) => {
          if (response.destroyed) return;
          // The machine's output comes in 32 KiB pieces, several at a time: one socket write for them all.
          response.cork();
          response.write(chunk);
          process.nextTick(() => response.uncork());
        },
        drained: () => drainedOf(response),
        signal: gone.signal,
      })
      .then(
        () => response.end(),
        (error) => {
          // Headers gone already: the only honest signal left is a cut.
          if (response.headersSent) response.destroy(error as Error);
          else throw error;
        },
      );
  }

  private follow(capabilityId: string, policy: FilesPolicy, response: ServerResponse): void {
    response.writeHead(200, {
      "Content-Type": "text/event-stream",
      "Cache-Control": "no-store, no-transform",
      Connection: "keep-alive",
    });
    response.write(": open\n\n");
    const stream = { capabilityId, computerId: policy.computerId, response };
    this.streams.add(stream);
    response.on("close", () => this.streams.delete(stream));
  }

  /** The capability a request carries as `Authorization: Bearer <token>`, if it is live. */
  private capabilityOf(request: IncomingMessage): { id: string; issued: Issued } {
    const token = /^Bearer ([A-Za-z0-9_-]+)$/.exec(request.headers.authorization ?? "")?.[1];
    const sealed = token === undefined ? undefined : this.seal.openAs(token, sealedSchema);
    const issued = sealed === undefined ? undefined : this.issued.get(sealed.id);
    if (sealed === undefined || issued === undefined || issued.revoked || issued.expiresAt <= this.clock())
      throw new AgentComputerError(
        "LEASE_LOST",
        "This Files capability is not valid here (expired, revoked, or issued by another process); ask for a new one.",
      );
    return { id: sealed.id, issued };
  }

  private sendPage(response: ServerResponse): void {
    response.writeHead(200, {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Length": String(Buffer.byteLength(this.page.html)),
      "Cache-Control": "no-store, no-transform",
      "Content-Security-Policy": this.page.contentSecurityPolicy,
      "Referrer-Policy": "no-referrer",
      "X-Content-Type-Options": "nosniff",
    });
    response.end(this.page.html);
  }

  private fail(response: ServerResponse, error: unknown): void {
    if (response.headersSent) {
      response.destroy();
      return;
    }
    const e = AgentComputerError.is(error) ? error : new AgentComputerError("UNAVAILABLE", "The files request failed.");
    sendJson(response, e.code === "LEASE_LOST" && /Files capability/.test(e.message) ? 401 : (STATUS[e.code] ?? 503), {
      code: e.code,
      message: e.message,
    });
  }
}

/** Resolves once `response` took what it buffered (the next chunk is read only then); ABORTED when it closed. */
function drainedOf(response: ServerResponse): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (response.destroyed) return reject(new AgentComputerError("ABORTED", "The browser went away."));
    if (!response.writableNeedDrain) return resolve();
    const gone = () => {
      response.off("drain", drained);
      reject(new AgentComputerError("ABORTED", "The browser went away."));
    };
    const drained = () => {
      response.off("close", gone);
      resolve();
    };
    response.once("drain", drained);
    response.once("close", gone);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(text)),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
  });
  response.end(text);
}
