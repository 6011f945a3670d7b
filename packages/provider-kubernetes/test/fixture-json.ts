import type { IncomingMessage } from "node:http";

// biome-ignore lint/suspicious/noExplicitAny: pod JSON as the API shapes it; the fixture reads and writes fields of any kind.
export type Json = Record<string, any>;

/** A Status object, the API's answer for a failure. */
export function statusBody(code: number, reason: string, message: string, details?: Json): Json {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, details, code };
}

/** A request's body as text. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
