// The small programs the emulator runs inside a sandbox's container to do
// what Daytona's toolbox daemon does there itself (it is a Go process in the
// sandbox; the emulator reaches the container only through `docker exec`).
// Each is written from the daemon's behaviour at daytonaio/daytona v0.190.0,
// cited beside it; none is the daemon's code.

/** The labels the daemon puts before every line of a command's log (libs/common-go/pkg/log/read_multiplex_log.go:16-17). */
export const STDOUT_LABEL = Buffer.from([1, 1, 1]);
export const STDERR_LABEL = Buffer.from([2, 2, 2]);

/**
 * Starts a session's long-lived shell (apps/daemon/pkg/session/create.go
 * Create): its own process group (Setpgid, so a delete signals the whole
 * group), the shell GetShell picks (apps/daemon/pkg/common/get_shell.go:
 * zsh, then bash, from /etc/shells, else `sh`), the sandbox's environment,
 * output discarded (the daemon gives it no stdout); the session's folder is
 * made as Create makes it. A `docker exec` process leads its own session
 * and may not change its group, so the shell is a forked child (the parent
 * prints its pid, so a delete can find it, and waits for it).
 *
 * argv: <session dir>
 */
export const SESSION_SHELL_LAUNCHER = String.raw`import os, sys
os.makedirs(sys.argv[1], 0o755, exist_ok=True)
try:
    listed = "".join(l for l in open("/etc/shells") if l.strip() and not l.startswith("#"))
except OSError:
    listed = ""
shell = "sh"
for candidate in ("/usr/bin/zsh", "/bin/zsh", "/usr/bin/bash", "/bin/bash"):
    if candidate in listed:
        shell = candidate
        break
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    devnull = os.open("/dev/null", os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.execvp(shell, [shell])
sys.stdout.write("%d\n" % pid)
sys.stdout.flush()
os.close(0)
os.waitpid(pid, 0)`;

/** Shell words in double quotes, as Go's %q writes a plain path (the daemon quotes its paths so). */
function quoted(value: string): string {
  return JSON.stringify(value);
}

/** Where a command's files are (apps/daemon/pkg/session/types.go LogFilePath, InputFilePath; execute.go:58 cmd.sh). */
export interface CommandFiles {
  dir: string;
  log: string;
  exitCode: string;
  input: string;
  script: string;
}

export function commandFiles(sessionDir: string, commandId: string): CommandFiles {
  const dir = `${sessionDir}/${commandId}`;
  return {
    dir,
    log: `${dir}/output.log`,
    exitCode: `${dir}/exit_code`,
    input: `${dir}/input.pipe`,
    script: `${dir}/cmd.sh`,
  };
}

/**
 * What the daemon writes to a session shell's stdin for one command
 * (apps/daemon/pkg/session/execute.go Execute and cmdWrapperFormat): FIFOs
 * for stdout, stderr and stdin in the command's folder; one reader per
 * output FIFO that appends each line to output.log after its label (01 01 01
 * or 02 02 02), a last line without a newline given one; stdin held open
 * for an async command (so input can be sent) and at EOF for a sync one; the
 * command file sourced in the session shell itself (so a `cd` or variable
 * stays for the next command); the exit code appended to `exit_code` only
 * after both readers drained; the FIFOs removed. The variable names are the
 * daemon's: the command runs in the same shell and can see them.
 */
export function commandWrapper(files: CommandFiles, runAsync: boolean): string {
  const holder = runAsync ? 'while :; do sleep 3600; done > "$ip" &' : 'cat /dev/null > "$ip" &';
  return [
    "{",
    `log=${quoted(files.log)}`,
    `dir=${quoted(files.dir)}`,
    'sp="$dir/stdout.pipe"',
    'ep="$dir/stderr.pipe"',
    `ip=${quoted(files.input)}`,
    'rm -f "$sp" "$ep" "$ip" && mkfifo "$sp" "$ep" "$ip" || exit 1',
    'cleanup() { rm -f "$sp" "$ep" "$ip"; }',
    "trap 'cleanup' EXIT HUP INT TERM",
    `( while IFS= read -r line || [ -n "$line" ]; do printf '\\001\\001\\001%s\\n' "$line"; done < "$sp" ) >> "$log" & r1=$!`,
    `( while IFS= read -r line || [ -n "$line" ]; do printf '\\002\\002\\002%s\\n' "$line"; done < "$ep" ) >> "$log" & r2=$!`,
    holder,
    "ip_pid=$!",
    `{ . ${quoted(files.script)}; } < "$ip" > "$sp" 2> "$ep"`,
    "_ec=$?",
    'kill "$ip_pid" 2>/dev/null; wait "$ip_pid" 2>/dev/null',
    'wait "$r1" "$r2"',
    `echo "$_ec" >> ${quoted(files.exitCode)}`,
    "cleanup",
    "}",
    "",
  ].join("\n");
}

/**
 * Prepares a command's folder before its wrapper runs, as Execute does from
 * Go (apps/daemon/pkg/session/execute.go:44-61): the folder, an empty
 * output.log, cmd.sh (mode 600) holding the command as sent (from stdin).
 *
 * argv (after the script name): <dir> <log> <cmd.sh>
 */
export const PREPARE_COMMAND = 'mkdir -p -- "$1" && : > "$2" && cat > "$3" && chmod 600 -- "$3"';

/**
 * Reads a command's log the way the daemon's log websocket does
 * (apps/daemon/internal/util/log_reader.go ReadLogWithExitCode): reads of at
 * most 1024 bytes, each written out as it comes; without follow it ends at
 * EOF; with follow it polls every 20 ms and ends only after 50 reads in a
 * row found nothing (a second) and the exit-code file holds a value. It also
 * ends when the session's folder is gone (the session was deleted: the daemon
 * closes the socket then, log.go:62-78), so no reader outlives its session.
 *
 * argv: <log> <exit_code file> <follow 0|1> <session dir>
 */
export const LOG_FOLLOWER = `import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
follow = sys.argv[3] == "1"
idle = 0
while True:
    data = os.read(fd, 1024)
    if data:
        idle = 0
        os.write(1, data)
        continue
    if not follow or not os.path.isdir(sys.argv[4]):
        break
    idle += 1
    if idle >= 50:
        idle = 0
        try:
            with open(sys.argv[2]) as f:
                if f.read().strip():
                    break
        except OSError:
            pass
    time.sleep(0.02)`;

/**
 * Sends input to a running command (apps/daemon/pkg/session/input.go
 * SendInput): opens its input FIFO for writing (exit 3 when it cannot: the
 * daemon's 500), writes the data (a newline added when it has none), and,
 * unless the command suppresses echo, appends it to the log as stdout.
 *
 * argv: <input.pipe> <output.log> <echo 0|1>; the data on stdin.
 */
export const INPUT_WRITER = String.raw`import os, sys
data = sys.stdin.buffer.read()
if not data.endswith(b"\n"):
    data += b"\n"
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
except OSError as e:
    sys.stderr.write("failed to open input pipe: %s" % e.strerror)
    sys.exit(3)
view = memoryview(data)
while view:
    view = view[os.write(fd, view):]
os.close(fd)
if sys.argv[3] == "1":
    try:
        with open(sys.argv[2], "ab") as log:
            log.write(b"\x01\x01\x01" + data)
    except OSError:
        pass`;

/**
 * Waits for a sync command's exit code the way Execute does (execute.go:90-
 * 121: the exit-code file read every 50 ms), then prints it on the first
 * line and the whole log after it.
 *
 * argv: <exit_code file> <log>
 */
export const SYNC_WAITER = String.raw`import sys, time
while True:
    try:
        with open(sys.argv[1]) as f:
            code = f.read().strip()
        if code:
            break
    except OSError:
        pass
    time.sleep(0.05)
sys.stdout.buffer.write(code.encode() + b"\n")
with open(sys.argv[2], "rb") as log:
    sys.stdout.buffer.write(log.read())`;

/**
 * Ends a session (apps/daemon/pkg/session/delete.go Delete and
 * terminateSession): SIGTERM to the shell's process group and to every
 * descendant (the tree walked, for those that left the group); then, every
 * 100 ms for up to the grace period (5 s, the daemon's default:
 * apps/daemon/cmd/daemon/config/config.go:22-23), done once the shell is
 * gone or has no children; else SIGKILL the same way. The session's folder
 * is removed after.
 *
 * argv: <shell pid> <session dir> <grace seconds>
 */
export const SESSION_TERMINATOR = `import os, shutil, signal, sys, time
shell = int(sys.argv[1])
def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid:
            found.append(int(entry))
    return found
def signal_tree(pid, sig):
    kids = children(pid)
    for kid in kids:
        signal_tree(kid, sig)
    for kid in kids:
        try:
            os.kill(kid, sig)
        except OSError:
            pass
def hit(sig):
    try:
        os.killpg(shell, sig)
    except OSError:
        pass
    signal_tree(shell, sig)
hit(signal.SIGTERM)
deadline = time.time() + float(sys.argv[3])
ended = False
while time.time() < deadline:
    time.sleep(0.1)
    if not os.path.exists("/proc/%d" % shell) or not children(shell):
        ended = True
        break
if not ended:
    hit(signal.SIGKILL)
shutil.rmtree(sys.argv[2], ignore_errors=True)`;

/**
 * Splits a labelled log into stdout and stderr as the daemon does for its
 * JSON answers (apps/daemon/pkg/session/execute.go DemuxLogBytes): bytes
 * after a label belong to its stream up to the next label; bytes before the
 * first label belong to none.
 */
export function demuxLog(log: Buffer): { stdout: Buffer; stderr: Buffer } {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const labelAt = (i: number) =>
    i + 3 <= log.length && log[i] === log[i + 1] && log[i] === log[i + 2] && (log[i] === 1 || log[i] === 2);
  let at = 0;
  while (at < log.length) {
    if (!labelAt(at)) {
      at++;
      continue;
    }
    const target = log[at] === 1 ? stdout : stderr;
    let end = at + 3;
    while (end < log.length && !labelAt(end)) end++;
    target.push(log.subarray(at + 3, end));
    at = end;
  }
  return { stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
}
