/**
 * The Connect protocol's streaming envelope (connectrpc.com/docs/protocol):
 * one flags byte, a 4-byte big-endian length, the message. Flag 0x02 marks
 * the end-of-stream message, which carries the error when the call failed.
 */
export function envelope(message: unknown, flags = 0): Buffer {
  const body = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

export const END_STREAM = 0x02;

/** The messages of an enveloped request body. */
export function parseEnvelopes(body: Buffer): unknown[] {
  const out: unknown[] = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const length = body.readUInt32BE(at + 1);
    out.push(JSON.parse(body.subarray(at + 5, at + 5 + length).toString("utf8") || "{}"));
    at += 5 + length;
  }
  return out;
}
