// What Daytona's toolbox daemon writes and reads for a session command, at
// daytonaio/daytona v0.190.0 (apps/daemon/pkg/session), cited beside each:
// where the command's files are, the shell text that runs it, and how a
// labelled log splits into its streams. Written from the daemon's
// behaviour; none of it is the daemon's code.

/** The labels the daemon puts before every line of a command's log (libs/common-go/pkg/log/read_multiplex_log.go:16-17). */
export const STDOUT_LABEL = Buffer.from([1, 1, 1]);
export const STDERR_LABEL = Buffer.from([2, 2, 2]);

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
