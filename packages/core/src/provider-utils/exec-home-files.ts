import type { Readable } from "node:stream";
import type { ExecResult } from "../contract/exec-result.js";
import type { FileEntry } from "../contract/file-entry.js";
import { normalizeHomePath } from "../contract/home-path.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import type { HomeFiles } from "./home-files.js";
import type { HomeScriptRunner } from "./home-script-runner.js";

// Every script resolves the path INSIDE the machine (realpath follows the
// machine's links, not the host's) and refuses anything outside the home.
// `$(...; printf x)` keeps names that end in a newline intact.
const RESOLVE = `home=$1 rel=$2
resolve() {
  t=$(realpath -m -- "$home/$rel"; printf x); t=\${t%x}; t=\${t%?}
  case "$t" in "$home"|"$home"/*) ;; *) exit 64 ;; esac
}
resolve
`;

// $3, when set, is the most fields to print (four per entry): head stops
// find there, so a folder of a million entries is not listed whole.
const LIST = `${RESOLVE}[ -e "$t" ] || exit 66
[ -d "$t" ] || exit 65
[ -z "$3" ] && exec find "$t" -mindepth 1 -maxdepth 1 -printf '%y\\0%s\\0%T@\\0%f\\0'
find "$t" -mindepth 1 -maxdepth 1 -printf '%y\\0%s\\0%T@\\0%f\\0' | head -z -n "$3"`;

const READ = `${RESOLVE}[ -e "$t" ] || exit 66
[ -f "$t" ] || exit 65
if [ -n "$3" ]; then
  s=$(stat -c %s -- "$t") || exit 66
  if [ "$s" -gt "$3" ]; then printf %s "$s" >&2; exit 67; fi
fi
[ -n "$4" ] && exec head -c "$4" -- "$t"
exec cat -- "$t"`;

const WRITE = `${RESOLVE}[ "$t" = "$home" ] && exit 65
[ -d "$t" ] && exit 65
mkdir -p -- "\${t%/*}" 2>/dev/null || exit 68
# The folders just made are real ones, but a link may have appeared meanwhile.
resolve
cat > "$t" || exit 69`;

const EXIT = { outside: 64, wrongType: 65, missing: 66, tooLarge: 67, parentIsFile: 68 } as const;

const FILE_TYPES: Record<string, FileEntry["type"]> = { f: "file", d: "directory", l: "symlink" };

/**
 * The home's files as the machine sees them, through the provider's own
 * command channel (Docker's exec API, Kubernetes' pods/exec, ...): paths are
 * checked lexically on the host, then resolved inside the machine, so a
 * link planted in the home cannot lead a read or write out of it. Shared by
 * every provider whose machines run the computer image.
 */
export class ExecHomeFiles implements HomeFiles {
  constructor(
    private readonly workspacePath: string,
    private readonly run: HomeScriptRunner,
  ) {}

  async list(path: string, opts: { limit?: number } = {}): Promise<FileEntry[]> {
    const rel = normalizeHomePath(path);
    const { limit } = opts;
    const result = await this.script(LIST, rel, limit === undefined ? [] : [String(4 * limit)], {
      // Four fields per entry, a name at most 255 bytes: the output of `limit` entries fits this.
      maxOutputBytes: limit === undefined ? Number.POSITIVE_INFINITY : limit * 512,
    });
    this.check(result, path, "a folder");
    const fields = Buffer.from(result.stdout).toString("utf8").split("\0");
    const entries: FileEntry[] = [];
    for (let i = 0; i + 3 < fields.length; i += 4) {
      const [type, size, mtime, name] = fields.slice(i, i + 4) as [string, string, string, string];
      const kind = FILE_TYPES[type] ?? "other";
      entries.push({
        name,
        path: rel === "" ? name : `${rel}/${name}`,
        type: kind,
        size: kind === "file" ? Number(size) : 0,
        modifiedAt: Math.round(Number(mtime) * 1000),
      });
    }
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async read(path: string, opts: { maxBytes?: number; length?: number } = {}): Promise<Uint8Array> {
    const rel = normalizeHomePath(path);
    const { maxBytes, length } = opts;
    const arg = (n: number | undefined) => (n === undefined ? "" : String(n));
    // With a length, the machine sends only that much; the cap below never cuts a whole file short.
    const start = length === undefined ? undefined : Math.min(length, maxBytes ?? length);
    const result = await this.script(READ, rel, [start === undefined ? arg(maxBytes) : "", arg(start)], {
      maxOutputBytes: start ?? maxBytes ?? Number.POSITIVE_INFINITY,
    });
    if (result.exitCode === EXIT.tooLarge || (start === undefined && maxBytes !== undefined && result.truncated)) {
      const size = Buffer.from(result.stderr).toString("utf8").trim() || `over ${maxBytes}`;
      throw new AgentComputerError(
        "LIMIT_EXCEEDED",
        `${quote(path)} is ${size} bytes, over the ${maxBytes}-byte read limit; read a smaller file or raise maxBytes.`,
      );
    }
    this.check(result, path, "a regular file");
    return result.stdout;
  }

  async write(path: string, data: Uint8Array | Readable): Promise<void> {
    const rel = normalizeHomePath(path);
    if (rel === "") throw new AgentComputerError("INVALID_ARGUMENT", "Cannot write to the home itself; name a file.");
    const result = await this.script(WRITE, rel, [], { stdin: data, maxOutputBytes: 64 * 1024 });
    this.check(result, path, "a file path");
  }

  private script(
    body: string,
    rel: string,
    extra: string[],
    options: { stdin?: Uint8Array | Readable; maxOutputBytes: number },
  ): Promise<ExecResult> {
    return this.run(["sh", "-c", body, "home-files", this.workspacePath, rel, ...extra], options);
  }

  private check(result: ExecResult, path: string, expected: string): void {
    switch (result.exitCode) {
      case 0:
        return;
      case EXIT.outside:
        throw new AgentComputerError("INVALID_ARGUMENT", `Invalid path ${quote(path)}: it leads out of the home.`);
      case EXIT.missing:
        throw new AgentComputerError("NOT_FOUND", `${quote(path)} does not exist in the home.`);
      case EXIT.wrongType:
        throw new AgentComputerError("INVALID_ARGUMENT", `${quote(path)} is not ${expected}.`);
      case EXIT.parentIsFile:
        throw new AgentComputerError("INVALID_ARGUMENT", `A parent of ${quote(path)} is a file, not a folder.`);
      default: {
        const stderr = Buffer.from(result.stderr).toString("utf8").trim().slice(0, 500);
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The machine could not access ${quote(path)} (exit ${result.exitCode}): ${stderr || "no message"}`,
          { retryable: false },
        );
      }
    }
  }
}

/** A path as JSON, so newlines and control characters stay visible in messages. */
function quote(path: string): string {
  return JSON.stringify(path);
}
