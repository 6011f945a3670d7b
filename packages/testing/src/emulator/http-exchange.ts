import type { IncomingMessage, ServerResponse } from "node:http";

/** Thrown inside a route: the emulator answers with it (the service's error shape is the body). */
export class HttpAnswer extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body === "string" ? body : `HTTP ${status}`);
  }
}

/** The whole request body. */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The request body as JSON (undefined when empty); a body that is not JSON is a 400. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const raw = await readBody(req);
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new HttpAnswer(400, { message: "the body is not JSON" });
  }
}

/** Answers with JSON (or nothing, for 204 and an undefined body). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (body === undefined) {
    // An empty body said as such: some clients parse a chunked empty answer as JSON and fail.
    res.writeHead(status, status === 204 || status === 304 ? headers : { "content-length": 0, ...headers }).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}
