// How the emulator starts a process the way envd does (e2b-dev/infra
// packages/envd/internal/services/process/handler/handler.go New, Start, Wait),
// with what a Docker exec lacks: the engine reports a signal death as exit
// 128+n and cannot run a command as a user from root with its groups. So a
// small root leader (Perl: Debian's perl-base is Essential, in every
// Debian-based template) does envd's part inside the sandbox: it looks the
// user up, resolves the working directory, composes the environment, forks
// the command as the user and reaps it, telling the emulator what envd would
// know. Its own command line and environment carry none of the command's
// text or variables (they travel in E2BEMU_* variables it drops), so process
// searches (`pgrep -f`, a marker in /proc/<pid>/environ) see only the command.

/** Where the leader and its status files live in a sandbox (root-only). */
export const LEADER_DIR = "/var/lib/e2b-emulator";
export const LEADER_PATH = `${LEADER_DIR}/leader.pl`;

/**
 * envd's own PATH, the only variable a process takes from envd's environment
 * (handler.go: `PATH=`+os.Getenv("PATH")). envd runs as a systemd service
 * with no Environment=PATH (orchestrator/pkg/template/build/core/rootfs/files/envd.service.tpl),
 * so it is systemd's default.
 */
export const ENVD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The first stderr line of every leader: `\0e2bemu <what>\n`. */
export const PREAMBLE = Buffer.from("\0e2bemu ");

/**
 * The leader. Its variables: E2BEMU_USER, E2BEMU_CWD (as the request gave it),
 * E2BEMU_STATUS (where a signal death's wait status goes), E2BEMU_A<i> (cmd,
 * then args), E2BEMU_E<i> (`KEY=VALUE`, in the order they apply: sandbox
 * variables, then the request's). It writes one preamble line on stderr before
 * the command can write anything:
 *   `user`            the user does not exist (authenticate.go: "invalid username")
 *   `cwd <path>`      the resolved cwd does not exist (handler.go New)
 *   `start <message>` the start failed (handler.go Start: "error starting process")
 *   `invalid <message>` the cwd could not be resolved (handler.go New: invalid_argument)
 *   `pid <pid>`       the command runs; its pid is the command's own (sh execs into it)
 * and exits with the command's exit code, or, when a signal killed it, 128+n
 * after writing the raw wait status to E2BEMU_STATUS.
 */
export const LEADER_SCRIPT = String.raw`use strict;
my $user = $ENV{E2BEMU_USER};
my $raw = $ENV{E2BEMU_CWD};
my $status_file = $ENV{E2BEMU_STATUS};
my (@argv, @pairs);
for (my $i = 0; exists $ENV{"E2BEMU_A$i"}; $i++) { push @argv, $ENV{"E2BEMU_A$i"} }
for (my $i = 0; exists $ENV{"E2BEMU_E$i"}; $i++) { push @pairs, $ENV{"E2BEMU_E$i"} }
sub tell_emulator { syswrite(STDERR, "\0e2bemu $_[0]\n") }
# permissions/authenticate.go GetUser: user.Lookup.
my @pw = getpwnam($user);
unless (@pw) { tell_emulator("user"); exit 0 }
my ($name, $uid, $gid, $home) = @pw[0, 2, 3, 7];
# handler.go New: the user's gid, then its supplementary groups.
my @groups = ($gid);
while (my @g = getgrent()) { push @groups, $g[2] if grep { $_ eq $name } split / /, $g[3] }
endgrent();
# permissions/path.go ExpandAndResolve: empty is the default workdir (none in a
# v2 template, so the home), ~ is the home, a relative path is joined to it.
my $cwd = $raw eq "" ? $home : $raw;
if ($cwd =~ /^~/) {
  unless ($cwd =~ m{^~(?:/|$)}) {
    tell_emulator("invalid failed to expand path '$cwd' for user '$name': cannot expand user-specific home dir");
    exit 0;
  }
  $cwd = $home . substr($cwd, 1);
}
$cwd = "$home/$cwd" unless $cwd =~ m{^/};
my @parts;
for (split m{/+}, $cwd) { next if $_ eq "" || $_ eq "."; if ($_ eq "..") { pop @parts } else { push @parts, $_ } }
$cwd = "/" . join("/", @parts);
# handler.go New: os.Stat as root; a missing cwd fails the start.
unless (-e $cwd) { tell_emulator("cwd $cwd"); exit 0 }
# handler.go New: PATH from envd, HOME from passwd, USER, LOGNAME, then the
# sandbox's variables, then the request's; the last value of a name wins.
my %env = (PATH => $ENV{E2BEMU_PATH}, HOME => $home, USER => $name, LOGNAME => $name);
for (@pairs) { my ($k, $v) = split /=/, $_, 2; $env{$k} = $v }
pipe(my $gate_r, my $gate_w) or do { tell_emulator("start pipe: $!"); exit 0 };
pipe(my $err_r, my $err_w) or do { tell_emulator("start pipe: $!"); exit 0 };
my $pid = fork();
unless (defined $pid) { tell_emulator("start fork/exec /bin/sh: $!"); exit 0 }
if ($pid == 0) {
  close $gate_w; close $err_r;
  ($(, $)) = ($gid, join(" ", $gid, @groups));
  ($<, $>) = ($uid, $uid);
  if ($> != $uid || $< != $uid) { syswrite($err_w, "fork/exec /bin/sh: operation not permitted"); exit 127 }
  unless (chdir $cwd) { syswrite($err_w, "chdir $cwd: " . lc($!)); exit 127 }
  close $err_w;
  my $go; sysread($gate_r, $go, 1); close $gate_r;
  %ENV = %env;
  # handler.go New: /bin/sh -c '... exec "$@"' -- cmd args.
  exec { "/bin/sh" } "/bin/sh", "-c", 'exec "$@"', "--", @argv;
  exit 127;
}
close $gate_r; close $err_w;
my $failed = ""; my $buf;
while (sysread($err_r, $buf, 4096)) { $failed .= $buf }
close $err_r;
if ($failed ne "") { waitpid($pid, 0); tell_emulator("start $failed"); exit 0 }
tell_emulator("pid $pid");
close $gate_w;
close STDOUT;
waitpid($pid, 0);
my $st = $?;
if ($st & 127) {
  if (open(my $f, ">", $status_file)) { print $f "$st\n"; close $f }
  exit 128 + ($st & 127);
}
exit($st >> 8);
`;

/** What the leader said before the command could write. */
export type LeaderPreamble =
  | { kind: "pid"; pid: number }
  | { kind: "user" }
  | { kind: "cwd"; path: string }
  | { kind: "start" | "invalid"; message: string };

export function parsePreamble(line: string): LeaderPreamble | undefined {
  const [kind, ...rest] = line.split(" ");
  const value = rest.join(" ");
  if (kind === "pid" && /^\d+$/.test(value)) return { kind, pid: Number(value) };
  if (kind === "user") return { kind };
  if (kind === "cwd") return { kind, path: value };
  if (kind === "start" || kind === "invalid") return { kind, message: value };
  return undefined;
}

/** The leader's variables for one start. */
export function leaderEnv(options: {
  user: string;
  cwd: string;
  statusFile: string;
  argv: string[];
  /** In the order they apply (later ones win). */
  vars: [string, string][];
}): Record<string, string> {
  const env: Record<string, string> = {
    E2BEMU_USER: options.user,
    E2BEMU_CWD: options.cwd,
    E2BEMU_STATUS: options.statusFile,
    E2BEMU_PATH: ENVD_PATH,
  };
  options.argv.forEach((arg, i) => {
    env[`E2BEMU_A${i}`] = arg;
  });
  options.vars.forEach(([key, value], i) => {
    env[`E2BEMU_E${i}`] = `${key}=${value}`;
  });
  return env;
}

/**
 * A process's end as envd reports it (handler.go Wait): Go's ProcessState —
 * ExitCode() is -1 for a signal death, Exited() false, String() "signal:
 * killed" — and the error of cmd.Wait, absent on success. protojson leaves
 * out zero values: no `exitCode` for 0, no `exited` for false.
 */
export function endEventOf(outcome: { exitCode: number } | { signal: number }): Record<string, unknown> {
  if ("signal" in outcome) {
    const status = `signal: ${SIGNAL_NAMES[outcome.signal] ?? `signal ${outcome.signal}`}`;
    return { exitCode: -1, status, error: status };
  }
  const status = `exit status ${outcome.exitCode}`;
  return outcome.exitCode === 0
    ? { exited: true, status }
    : { exitCode: outcome.exitCode, exited: true, status, error: status };
}

/** Go's syscall.Signal.String() on Linux for the signals a command dies of. */
const SIGNAL_NAMES: Record<number, string> = {
  1: "hangup",
  2: "interrupt",
  3: "quit",
  4: "illegal instruction",
  5: "trace/breakpoint trap",
  6: "aborted",
  7: "bus error",
  8: "floating point exception",
  9: "killed",
  10: "user defined signal 1",
  11: "segmentation fault",
  12: "user defined signal 2",
  13: "broken pipe",
  14: "alarm clock",
  15: "terminated",
};
