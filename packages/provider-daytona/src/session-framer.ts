/**
 * The small program every command runs under inside the sandbox. The
 * toolbox's session logs are text (the SDK decodes them as UTF-8), and its
 * input is a string, so bytes travel framed: each chunk the command writes
 * becomes one base64 line on the same stream (stdout stays stdout, stderr
 * stays stderr), and after both streams end a last line `=<code>` on each
 * stream carries the exit code: the daemon labels the two streams in two
 * readers that append to one log (apps/daemon/pkg/session/execute.go
 * cmdWrapperFormat), so stderr's last lines may land after stdout's; the
 * command is over once both end lines arrived, a second before the
 * daemon closes the log stream (apps/daemon/internal/util/log_reader.go). Stdin, when the caller gives one, arrives as base64
 * lines ended by a `.` line. A line-based frame survives any split of the
 * log into websocket messages. The command's working directory is entered
 * here: 126 when it is missing, 127 when the program is.
 *
 * argv: <stdin 0|1> <working dir> <program> [args...]
 */
export const SESSION_FRAMER = String.raw`import base64, os, subprocess, sys, threading
def frame(stream, data):
    stream.write(base64.b64encode(data).decode("ascii") + "\n")
    stream.flush()
def finish(code):
    sys.stderr.write("=%d\n" % code)
    sys.stderr.flush()
    sys.stdout.write("=%d\n" % code)
    sys.stdout.flush()
    os._exit(code)
with_stdin = sys.argv[1] == "1"
try:
    os.chdir(sys.argv[2])
except OSError as e:
    frame(sys.stderr, ("cannot enter %s: %s\n" % (sys.argv[2], e.strerror)).encode())
    finish(126)
try:
    p = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
except OSError as e:
    frame(sys.stderr, ("%s: %s\n" % (sys.argv[3], e.strerror)).encode())
    finish(127 if isinstance(e, FileNotFoundError) else 126)
def pump(source, target):
    fd = source.fileno()
    while True:
        data = os.read(fd, 16384)
        if not data:
            return
        frame(target, data)
def feed():
    broken = False
    for line in sys.stdin.buffer:
        line = line.strip()
        if line == b".":
            break
        if broken or not line:
            continue
        try:
            p.stdin.write(base64.b64decode(line))
            p.stdin.flush()
        except BrokenPipeError:
            broken = True
    try:
        p.stdin.close()
    except BrokenPipeError:
        pass
threads = [threading.Thread(target=pump, args=(p.stdout, sys.stdout)), threading.Thread(target=pump, args=(p.stderr, sys.stderr))]
if with_stdin:
    threading.Thread(target=feed, daemon=True).start()
for t in threads:
    t.start()
for t in threads:
    t.join()
c = p.wait()
finish(c if c >= 0 else 128 - c)`;

/**
 * Decodes one stream of framed output: whole base64 lines become bytes;
 * `=<code>` ends it. Control bytes in a line are dropped: a frame holds
 * none, and a stray label byte the SDK's demultiplexer let through (it
 * keeps up to two bytes that might start a label: @daytonaio/sdk
 * utils/Stream.js stdDemuxStream) must not spoil a frame.
 */
export class FramedStream {
  private pending = "";
  /** Lines handled so far (a later reader of the same log skips them). */
  lines = 0;
  exitCode: number | undefined;

  constructor(
    private readonly onBytes: (bytes: Buffer) => void,
    /** Lines to pass over first: already handled by an earlier reader of the same log. */
    private skip = 0,
  ) {}

  /** A reader of the same log from its start that passes over what this one handled. */
  resumed(onBytes: (bytes: Buffer) => void): FramedStream {
    const next = new FramedStream(onBytes, this.lines);
    next.exitCode = this.exitCode;
    return next;
  }

  /** Feeds decoded log text. */
  push(text: string): void {
    this.pending += text;
    let newline = this.pending.indexOf("\n");
    while (newline >= 0) {
      const line = withoutControlBytes(this.pending.slice(0, newline)).trim();
      this.pending = this.pending.slice(newline + 1);
      newline = this.pending.indexOf("\n");
      this.lines++;
      if (this.skip > 0) {
        this.skip--;
        continue;
      }
      if (line.startsWith("=")) {
        this.exitCode = Number(line.slice(1));
        continue;
      }
      if (line.length > 0) this.onBytes(Buffer.from(line, "base64"));
    }
  }
}

/** The text without its control characters (below space, and DEL): none belongs in a frame. */
function withoutControlBytes(text: string): string {
  let kept = "";
  for (const char of text) {
    const code = char.charCodeAt(0);
    if (code >= 32 && code !== 127) kept += char;
  }
  return kept;
}
