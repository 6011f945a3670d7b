import type { Readable } from "node:stream";
import { PassThrough } from "node:stream";

/** One file part of a multipart upload, its bytes streaming. */
export interface UploadedPart {
  /** The part's form field name (`files[0].file`). */
  name: string;
  /** Text fields before it, by name (`files[0].path`). */
  fields: Record<string, string>;
  body: Readable;
}

/**
 * Reads a multipart/form-data request as the SDK's bulk upload sends it
 * (text fields, then file parts, chunked): text fields are collected,
 * each file part is handed on as a stream while it arrives, so a large
 * upload is never held whole.
 */
export async function readMultipart(
  body: Readable,
  contentType: string,
  onFile: (part: UploadedPart) => Promise<void>,
): Promise<Record<string, string>> {
  const boundaryMatch = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!boundaryMatch) throw new Error("multipart body without a boundary");
  const delimiter = Buffer.from(`\r\n--${boundaryMatch[1] ?? boundaryMatch[2]}`);
  const fields: Record<string, string> = {};
  // A leading CRLF lets the first delimiter match like the others.
  let buffer: Buffer = Buffer.from("\r\n");
  let state: "preamble" | "headers" | "body" | "done" = "preamble";
  let part: { name: string; file: boolean; text: Buffer[]; stream?: PassThrough; done?: Promise<void> } | undefined;
  const pending: Promise<void>[] = [];

  const endPart = () => {
    if (!part) return;
    if (part.stream) part.stream.end();
    else fields[part.name] = Buffer.concat(part.text).toString("utf8");
    part = undefined;
  };

  const writeBody = async (bytes: Buffer) => {
    if (!part || bytes.length === 0) return;
    if (!part.stream) {
      part.text.push(bytes);
      return;
    }
    if (!part.stream.write(bytes)) await new Promise((resolve) => part?.stream?.once("drain", resolve));
  };

  for await (const chunk of body) {
    buffer = buffer.length === 0 ? (chunk as Buffer) : Buffer.concat([buffer, chunk as Buffer]);
    for (;;) {
      if (state === "preamble" || state === "body") {
        const at = buffer.indexOf(delimiter);
        if (at < 0) {
          // Keep what could be the start of a delimiter.
          const keep = Math.min(buffer.length, delimiter.length + 4);
          if (state === "body") await writeBody(buffer.subarray(0, buffer.length - keep));
          buffer = buffer.subarray(buffer.length - keep);
          break;
        }
        if (buffer.length < at + delimiter.length + 2) break;
        if (state === "body") await writeBody(buffer.subarray(0, at));
        endPart();
        const after = buffer.subarray(at + delimiter.length, at + delimiter.length + 2).toString("latin1");
        buffer = buffer.subarray(at + delimiter.length + 2);
        state = after === "--" ? "done" : "headers";
        if (state === "done") break;
        continue;
      }
      if (state === "headers") {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) break;
        const headers = buffer.subarray(0, end).toString("utf8");
        buffer = buffer.subarray(end + 4);
        const name = /name="([^"]*)"/i.exec(headers)?.[1] ?? "";
        const file = /filename="/i.test(headers);
        part = { name, file, text: [] };
        if (file) {
          const stream = new PassThrough();
          part.stream = stream;
          pending.push(onFile({ name, fields: { ...fields }, body: stream }));
        }
        state = "body";
        continue;
      }
      break;
    }
    if (state === "done") break;
  }
  endPart();
  await Promise.all(pending);
  return fields;
}

/** The first file part of a whole multipart/form-data body: its filename and bytes. */
export function parseSingleFilePart(body: Buffer, contentType: string): { filename: string; data: Buffer } | undefined {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  const mark = Buffer.from(`--${boundary?.[1] ?? boundary?.[2]}`);
  const start = body.indexOf(mark);
  if (start < 0) return undefined;
  const headerEnd = body.indexOf("\r\n\r\n", start);
  const headers = body.subarray(start, headerEnd).toString("utf8");
  const end = body.indexOf(Buffer.concat([Buffer.from("\r\n"), mark]), headerEnd);
  const filename = /filename="([^"]*)"/.exec(headers)?.[1] ?? "";
  return { filename, data: body.subarray(headerEnd + 4, end) };
}
