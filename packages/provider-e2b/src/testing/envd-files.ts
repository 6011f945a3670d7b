import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Readable, Transform, type Writable } from "node:stream";
import { createGunzip, createGzip } from "node:zlib";
import {
  type ComputerContainers,
  type Exchange,
  type MachineInput,
  pipeStdout,
  readBody,
  sendJson,
} from "@agent-computer/testing/emulator";
import { type EmulatedSandbox, lookUpUser, resolvePath, type SandboxUser, TEMPLATE_USER } from "./e2b-sandbox.js";

// envd's /files (e2b-dev/infra packages/envd/internal/api/download.go,
// upload.go): the user is the `username` query parameter (else the sandbox's
// default user); paths resolve against that user's home; envd itself, root,
// opens the files, and a written file and the folders made for it are
// chowned to the user. Errors are `{code, message}` (api/error.go).

const READ = `[ -e "$1" ] || exit 66
[ -d "$1" ] && exit 67
exec cat -- "$1"`;

/**
 * permissions/path.go EnsureDirs (each missing folder made 0755 and chowned
 * to the user; a file on the way is an error), then upload.go processFile: a
 * folder at the path is refused, an existing file chowned first, the file
 * written (O_TRUNC, 0666 under envd's umask) and chowned.
 */
const WRITE = `p=$1 owner=$2:$3
cur= dir=$(dirname -- "$p") ifs=$IFS
IFS=/
set -f
for c in $dir; do
  IFS=$ifs
  [ -z "$c" ] && continue
  cur="$cur/$c"
  if [ -e "$cur" ] || [ -L "$cur" ]; then
    [ -d "$cur" ] || { printf 'path is a file: %s' "$cur" >&2; exit 70; }
  else
    mkdir -m 0755 -- "$cur" 2>/dev/null || [ -d "$cur" ] || exit 71
    chown "$owner" -- "$cur"
  fi
done
[ -d "$p" ] && exit 72
[ -e "$p" ] && chown "$owner" -- "$p"
cat > "$p" || exit 73
chown "$owner" -- "$p"`;

type Reply = (status: number, body?: unknown) => void;

/** A stream that passes bytes on no faster than `bytesPerSecond` (a real link's bandwidth). */
function throttled(bytesPerSecond: number): Transform {
  const started = Date.now();
  let passed = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      passed += chunk.length;
      const wait = started + (passed / bytesPerSecond) * 1000 - Date.now();
      setTimeout(() => done(null, chunk), Math.max(0, wait));
    },
  });
}

export class EnvdFiles {
  constructor(
    private readonly containers: ComputerContainers,
    /** /files' bandwidth each way (unset: loopback's). */
    private readonly bytesPerSecond?: number,
  ) {}

  /** GET /files (download.go GetFiles). */
  async download(req: IncomingMessage, res: ServerResponse, sandbox: EmulatedSandbox, url: URL, exchange: Exchange) {
    const reply = replier(res, exchange);
    const refused = signingRefusal(sandbox, req, url, "read");
    if (refused) return reply(401, { code: 401, message: refused });
    const user = await this.user(sandbox, url);
    if ("message" in user) return reply(401, { code: 401, message: user.message });
    const path = resolvePath(url.searchParams.get("path") ?? "", user.home);
    if (path === undefined) return reply(400, { code: 400, message: "error expanding and resolving path" });
    const gzip = acceptsGzip(req.headers["accept-encoding"]);
    let started = false;
    const zipped = gzip ? createGzip() : undefined;
    zipped?.pipe(res);
    const slow = this.bytesPerSecond ? throttled(this.bytesPerSecond) : undefined;
    slow?.pipe(zipped ?? res);
    const sink: Writable = slow ?? zipped ?? res;
    const open = () => {
      if (started) return;
      started = true;
      const name = path.split("/").pop() ?? "";
      res.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-disposition": `inline; filename="${name.replace(/["\\]/g, "\\$&")}"`,
        vary: "Accept-Encoding",
        ...(gzip ? { "content-encoding": "gzip" } : {}),
      });
    };
    const argv = ["sh", "-c", READ, "read", path];
    const read = await pipeStdout(this.containers, sandbox.containerId, argv, { user: "0:0" }, sink, open);
    if (!started && read.exitCode === 66) return reply(404, { code: 404, message: `path '${path}' does not exist` });
    if (!started && read.exitCode === 67) return reply(400, { code: 400, message: `path '${path}' is a directory` });
    if (!started && read.exitCode !== 0) {
      const why = read.stderr.toString("utf8").trim();
      return reply(500, { code: 500, message: `error opening file '${path}': ${why || `exit ${read.exitCode}`}` });
    }
    if (!started && !gzip) {
      // An empty file: said so, as http.ServeContent does with its Content-Length.
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": 0 }).end();
    } else {
      open();
      sink.end();
    }
    exchange.answer(200);
  }

  /** POST /files (upload.go PostFiles): octet-stream to `path`, or multipart parts named `file`. */
  async upload(req: IncomingMessage, res: ServerResponse, sandbox: EmulatedSandbox, url: URL, exchange: Exchange) {
    const reply = replier(res, exchange, req);
    const refused = signingRefusal(sandbox, req, url, "write");
    if (refused) return reply(401, { code: 401, message: refused });
    const encoding = String(req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "gzip" && encoding !== "identity" && encoding !== "") {
      const message = `error decompressing request body: unsupported Content-Encoding: ${encoding}`;
      return reply(400, { code: 400, message });
    }
    const user = await this.user(sandbox, url);
    if ("message" in user) return reply(401, { code: 401, message: user.message });
    const body = (): Readable => {
      const plain: Readable = encoding === "gzip" ? req.pipe(createGunzip()) : req;
      return this.bytesPerSecond ? plain.pipe(throttled(this.bytesPerSecond)) : plain;
    };
    const contentType = req.headers["content-type"] ?? "";
    const raw = url.searchParams.get("path");
    if (/^application\/octet-stream\b/i.test(contentType)) {
      if (raw === null)
        return reply(400, { code: 400, message: "path query parameter is required for raw body upload" });
      const path = resolvePath(raw, user.home);
      if (path === undefined) return reply(400, { code: 400, message: `error resolving path: ${raw}` });
      const written = await this.write(sandbox, path, user, body());
      if (written) return reply(written.status, { code: written.status, message: written.message });
      return reply(200, [entryOf(path)]);
    }
    if (!/^multipart\//i.test(contentType)) {
      const message = `unsupported content type: ${contentType}, expected multipart/form-data or application/octet-stream`;
      return reply(400, { code: 400, message });
    }
    const parts = splitMultipart(await readBody(body() as IncomingMessage), contentType);
    const entries: ReturnType<typeof entryOf>[] = [];
    for (const part of parts.filter((p) => p.name === "file")) {
      const path = resolvePath(raw ?? part.filename, user.home);
      if (path === undefined) return reply(400, { code: 400, message: "error resolving path" });
      if (entries.some((e) => e.path === path)) {
        const message = `you cannot upload multiple files to the same path '${path}' in one upload request, only the first specified file was uploaded`;
        return reply(400, { code: 400, message });
      }
      const written = await this.write(sandbox, path, user, part.data);
      if (written) return reply(written.status, { code: written.status, message: written.message });
      entries.push(entryOf(path));
    }
    reply(200, entries);
  }

  /** The request's user: `username`, else the sandbox's default user (download.go, upload.go). */
  private async user(sandbox: EmulatedSandbox, url: URL): Promise<SandboxUser | { message: string }> {
    const name = url.searchParams.get("username") ?? TEMPLATE_USER;
    const user = await lookUpUser(this.containers, sandbox, name);
    return user ?? { message: `error looking up user '${name}': user: unknown user ${name}` };
  }

  private async write(
    sandbox: EmulatedSandbox,
    path: string,
    user: SandboxUser,
    input: MachineInput,
  ): Promise<{ status: number; message: string } | undefined> {
    const argv = ["sh", "-c", WRITE, "write", path, String(user.uid), String(user.gid)];
    const done = await this.containers.run(sandbox.containerId, argv, { user: "0:0", input });
    const why = done.stderr.toString("utf8").trim();
    if (done.exitCode === 0) return undefined;
    if (done.exitCode === 72) return { status: 400, message: `path is a directory: ${path}` };
    if (/No space left/i.test(why)) return { status: 507, message: "not enough disk space available" };
    if (done.exitCode === 70 || done.exitCode === 71)
      return { status: 500, message: `error ensuring directories: ${why}` };
    return { status: 500, message: `error writing file: ${why || `exit ${done.exitCode}`}` };
  }
}

function entryOf(path: string) {
  return { path, name: path.split("/").pop() ?? "", type: "file" as const };
}

/** Answers and records; an upload's unread body is drained first so the client sees the answer. */
function replier(res: ServerResponse, exchange: Exchange, req?: IncomingMessage): Reply {
  return (status, body) => {
    exchange.answer(status, body);
    if (req && !req.readableEnded) req.resume();
    sendJson(res, status, body);
  };
}

/**
 * api/auth.go validateSigning: with an access token set, the header token
 * must match, or a signature `v1_` + base64(sha256("path:operation:username:token[:expiration]"))
 * (raw std encoding, shared/pkg/keys/sha256.go) is required and must not be expired.
 */
function signingRefusal(
  sandbox: EmulatedSandbox,
  req: IncomingMessage,
  url: URL,
  operation: "read" | "write",
): string | undefined {
  const token = sandbox.envdAccessToken;
  if (!token) return undefined;
  const header = req.headers["x-access-token"];
  if (typeof header === "string" && header !== "")
    return header === token ? undefined : "access token present in header but does not match";
  const signature = url.searchParams.get("signature");
  if (signature === null) return "missing signature query parameter";
  const expiration = url.searchParams.get("signature_expiration");
  const parts = [url.searchParams.get("path") ?? "", operation, url.searchParams.get("username") ?? "", token];
  if (expiration !== null) parts.push(expiration);
  const expected = `v1_${createHash("sha256").update(parts.join(":")).digest("base64").replace(/=+$/, "")}`;
  if (signature !== expected) return "invalid signature";
  if (expiration !== null && Number(expiration) < Date.now() / 1000) return "signature is already expired";
  return undefined;
}

/** api/encoding.go: gzip when the client accepts it with a non-zero quality. */
function acceptsGzip(header: string | string[] | undefined): boolean {
  return String(header ?? "")
    .split(",")
    .some((entry) => {
      const [name, ...params] = entry.trim().split(";");
      const q = params.map((p) => /^\s*q=([\d.]+)/.exec(p)?.[1]).find(Boolean);
      return name?.trim().toLowerCase() === "gzip" && (q === undefined || Number(q) > 0);
    });
}

/** Every part of a whole multipart/form-data body: its form name, filename and bytes. */
function splitMultipart(body: Buffer, contentType: string): { name: string; filename: string; data: Buffer }[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!boundary) return [];
  const mark = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const parts: { name: string; filename: string; data: Buffer }[] = [];
  let at = body.indexOf(mark);
  while (at >= 0) {
    const headerStart = at + mark.length;
    if (body.subarray(headerStart, headerStart + 2).toString() === "--") break;
    const headerEnd = body.indexOf("\r\n\r\n", headerStart);
    if (headerEnd < 0) break;
    const next = body.indexOf(Buffer.concat([Buffer.from("\r\n"), mark]), headerEnd);
    if (next < 0) break;
    const headers = body.subarray(headerStart, headerEnd).toString("utf8");
    parts.push({
      name: /\bname="([^"]*)"/i.exec(headers)?.[1] ?? "",
      filename: /\bfilename="([^"]*)"/i.exec(headers)?.[1] ?? "",
      data: body.subarray(headerEnd + 4, next),
    });
    at = next + 2;
  }
  return parts;
}
