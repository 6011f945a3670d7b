/** The largest terminal a client may ask for; anything bigger is a broken or hostile client. */
export const MAX_TERMINAL_COLUMNS = 1000;
export const MAX_TERMINAL_ROWS = 1000;

const FRAME_INPUT = 0;
const FRAME_RESIZE = 1;

/** A client's text frame that is not a control message the gateway understands. */
export class InvalidTerminalMessage extends Error {}

function frame(type: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(type, 0);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/**
 * One websocket message of a terminal client, as the PTY server reads it
 * (terminal-pty-server.py): binary frames are keystrokes, text frames JSON
 * control. `{"type":"resize","cols":N,"rows":N}` resizes the shell's PTY;
 * other types are ignored (room for later ones). Text that is not a JSON
 * object, or a resize out of range, throws: only that connection closes.
 */
export function terminalFrameOf(data: Buffer, isBinary: boolean): Buffer | undefined {
  if (isBinary) return data.length === 0 ? undefined : frame(FRAME_INPUT, data);
  let message: unknown;
  try {
    message = JSON.parse(data.toString("utf8"));
  } catch {
    throw new InvalidTerminalMessage("a text frame must be a JSON control message");
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw new InvalidTerminalMessage("a text frame must be a JSON object");
  }
  const { type, cols, rows } = message as { type?: unknown; cols?: unknown; rows?: unknown };
  if (type !== "resize") return undefined;
  if (
    !Number.isInteger(cols) ||
    !Number.isInteger(rows) ||
    (cols as number) < 1 ||
    (rows as number) < 1 ||
    (cols as number) > MAX_TERMINAL_COLUMNS ||
    (rows as number) > MAX_TERMINAL_ROWS
  ) {
    throw new InvalidTerminalMessage(
      `resize takes whole cols 1-${MAX_TERMINAL_COLUMNS} and rows 1-${MAX_TERMINAL_ROWS}`,
    );
  }
  const size = Buffer.alloc(4);
  size.writeUInt16BE(cols as number, 0);
  size.writeUInt16BE(rows as number, 2);
  return frame(FRAME_RESIZE, size);
}
