import type { WebSocket } from "ws";

/** Runs one command line in the computer, as the bot's shell tool would. */
export type FakeShellRun = (line: string) => Promise<{ stdout: Uint8Array; stderr: Uint8Array }>;

const PROMPT = "$ ";

/**
 * A simulated shell over the terminal's frames (packages/screens'
 * terminal page: binary frames are bytes typed or shown, a text frame is
 * JSON control such as `{"type":"resize"}`): typed characters are echoed,
 * Backspace erases, Enter runs the line in the computer (sh -c, in the
 * bot's folder, through `run`) and shows its output, and `exit` ends the
 * session with a normal close, as a real shell's exit does. No PTY, so
 * full-screen programs do not work: it is for an app's tests, offline.
 */
export function serveShell(socket: WebSocket, run: FakeShellRun): void {
  let line = "";
  let busy = Promise.resolve();
  const show = (text: string) => {
    if (socket.readyState === socket.OPEN) socket.send(Buffer.from(text.replace(/\r?\n/g, "\r\n")), { binary: true });
  };
  const enter = async (command: string) => {
    if (command.trim() === "exit") {
      socket.close(1000, "the shell exited");
      return;
    }
    if (command.trim() !== "") {
      const result = await run(command).catch((error: Error) => ({
        stdout: new Uint8Array(),
        stderr: new TextEncoder().encode(`${error.message}\n`),
      }));
      show(Buffer.from(result.stdout).toString("utf8"));
      show(Buffer.from(result.stderr).toString("utf8"));
    }
    show(PROMPT);
  };
  socket.on("message", (data: Buffer, binary: boolean) => {
    if (!binary) return; // control: a resize changes nothing for a line shell
    for (const char of data.toString("utf8")) {
      if (char === "\r" || char === "\n") {
        const command = line;
        line = "";
        show("\n");
        busy = busy.then(() => enter(command));
      } else if (char === "\x7f" || char === "\b") {
        if (line.length > 0) {
          line = line.slice(0, -1);
          show("\b \b");
        }
      } else if (char >= " ") {
        line += char;
        show(char);
      }
    }
  });
  show(PROMPT);
}
