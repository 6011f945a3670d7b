#!/usr/bin/env python3
"""The PTY server of one control session (docs/architecture.md §4): python3, standard library only.

The screen gateway starts one per control capability that has terminals,
as the computer's user (never root), and stops it when that capability
ends. It listens on a Unix socket in its session folder (0700, made by the
gateway); each connection to it gets its own shell on its own PTY:

  terminal-pty-server.py --socket PATH --session DIR --home DIR --bot ID
                         [--display :N] [--user-name NAME]

Gateway to server, framed: [type: 1 byte][length: 4 bytes, big endian][payload]
  type 0: input bytes for the shell
  type 1: resize, payload [cols: 2 bytes][rows: 2 bytes], big endian
Server to gateway: the shell's output bytes, unframed. The server closes a
connection when its shell has exited and its output is sent.

The shell (`bash --noprofile --norc -l`: no start-up file of the home) starts in <home>/bots/<bot> when that exists (else
the home) with HOME, USER, LOGNAME, SHELL, TERM=xterm-256color and DISPLAY
set (DISPLAY only with --display: a terminal host beside the bot's processes
runs shells with no display, as the bot's own are). When this process's uid has no passwd entry, its shells (only they)
get one from nss_wrapper: passwd and group files in the session folder,
LD_PRELOAD=libnss_wrapper.so; /etc/passwd is never touched.

When a connection closes, its shell's session is hung up (SIGHUP and
SIGCONT to every process group in it). On SIGTERM, or when stdin (the
gateway's pipe) reaches end of file, every connection closes, every shell
is hung up (a shell still running after a grace period is killed with its
process group), the session folder is removed and the server exits.
Prints one JSON line on stdout once it listens: {"ready": true, "user", "nss"}.
"""

import errno
import fcntl
import grp
import json
import os
import pwd
import select
import shutil
import signal
import socket
import struct
import sys
import termios
import time

# Past this much waiting for one side, reading from the other pauses.
HIGH_WATER = 256 * 1024
# The gateway never sends a frame near this (its websocket frames are at most 256 KiB).
MAX_FRAME = 1024 * 1024
READ_SIZE = 64 * 1024
FRAME_INPUT = 0
FRAME_RESIZE = 1
# A shell that exited may leave output in its PTY: read it for this long.
EXITED_DRAIN_S = 2.0
# On stop, shells get this long to leave after their hangup before being killed.
HANGUP_GRACE_S = 1.0
NSS_WRAPPER_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")
# A login shell that reads none of the bot's start-up files (~/.bash_profile,
# ~/.profile, ~/.bashrc): the bot writes the home, and a person's shell runs
# on the display side (issue 45, finding 1). Bash alone can be told so; long
# options go before single-letter ones.
PERSON_SHELL = "/bin/bash"
PERSON_SHELL_ARGV = [PERSON_SHELL, "--noprofile", "--norc", "-l"]
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LANGUAGE", "TZ", "AGENT_COMPUTER_DESKTOP_STATE")


def log(message):
    sys.stderr.write("terminal-pty-server: %s\n" % message)
    sys.stderr.flush()


def parse_args(argv):
    known = {"socket", "session", "home", "bot", "display", "user-name"}
    out = {"user-name": "computer"}
    i = 0
    while i < len(argv):
        key = argv[i][2:] if argv[i].startswith("--") else None
        if key not in known or i + 1 >= len(argv):
            raise SystemExit("usage: terminal-pty-server.py --socket PATH --session DIR --home DIR --bot ID [--display :N]")
        out[key] = argv[i + 1]
        i += 2
    for key in ("socket", "session", "home", "bot"):
        if key not in out:
            raise SystemExit("terminal-pty-server.py: --%s is required" % key)
    return out


def write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def read_lines(path):
    try:
        with open(path) as f:
            return [line.rstrip("\n") for line in f if line.strip()]
    except OSError:
        return []


def identity(session, name, home):
    """The user name, shell and extra environment the shells get."""
    uid, gid = os.getuid(), os.getgid()
    try:
        entry = pwd.getpwuid(uid)
        shell = entry.pw_shell if entry.pw_shell and os.access(entry.pw_shell, os.X_OK) else "/bin/bash"
        return entry.pw_name, shell, {}
    except KeyError:
        pass
    shell = "/bin/bash"
    lib = next((d for d in NSS_WRAPPER_DIRS if os.path.exists(os.path.join(d, "libnss_wrapper.so"))), None)
    if lib is None:
        log("uid %d has no passwd entry and libnss_wrapper.so is missing: shells run unnamed" % uid)
        return name, shell, {}
    passwd = os.path.join(session, "passwd")
    group = os.path.join(session, "group")
    own = "%s:x:%d:%d:%s:%s:%s" % (name, uid, gid, name, home, shell)
    others = [line for line in read_lines("/etc/passwd") if line.split(":", 1)[0] != name]
    write_private(passwd, "\n".join([own] + others) + "\n")
    groups = read_lines("/etc/group")
    try:
        grp.getgrgid(gid)
    except KeyError:
        groups = [line for line in groups if line.split(":", 1)[0] != name] + ["%s:x:%d:" % (name, gid)]
    write_private(group, "\n".join(groups) + "\n")
    return name, shell, {"LD_PRELOAD": "libnss_wrapper.so", "NSS_WRAPPER_PASSWD": passwd, "NSS_WRAPPER_GROUP": group}


def set_size(fd, cols, rows):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def session_groups(sid):
    """Every process group with a member in session `sid` (the shell's session: its pid)."""
    groups = {sid}
    try:
        names = os.listdir("/proc")
    except OSError:
        return groups
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[3] == str(sid):
            groups.add(int(fields[2]))
    return groups


def hang_up(sid):
    for group in session_groups(sid):
        for sig in (signal.SIGHUP, signal.SIGCONT):
            try:
                os.killpg(group, sig)
            except OSError:
                pass


class Shell:
    """One connection and the shell it started."""

    def __init__(self, sock, pid, master):
        self.sock = sock
        self.pid = pid
        self.master = master
        self.inbuf = bytearray()
        self.to_pty = bytearray()
        self.to_sock = bytearray()
        self.exited_at = None

    def close_master(self):
        if self.master is not None:
            try:
                os.close(self.master)
            except OSError:
                pass
            self.master = None


class Server:
    def __init__(self, conf):
        self.conf = conf
        self.shells = {}
        self.running = set()
        self.stopping = False
        self.name, _shell, self.nss_env = identity(conf["session"], conf["user-name"], conf["home"])

    def environment(self, cwd):
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.setdefault("LANG", "C.UTF-8")
        env.update(
            {
                "HOME": self.conf["home"],
                "USER": self.name,
                "LOGNAME": self.name,
                "SHELL": PERSON_SHELL,
                "TERM": "xterm-256color",
                "COLORTERM": "truecolor",
                "PWD": cwd,
                # Nothing of the shell's start-up comes from the home, which the bot
                # writes: readline's key bindings from the system's file, the history
                # in the session's own 0700 folder.
                "INPUTRC": "/etc/inputrc",
                "HISTFILE": os.path.join(self.conf["session"], "history"),
            }
        )
        if "display" in self.conf:
            env["DISPLAY"] = self.conf["display"]
        env.update(self.nss_env)
        return env

    def start_shell(self, sock):
        home = self.conf["home"]
        cwd = os.path.join(home, "bots", self.conf["bot"])
        if not os.path.isdir(cwd):
            cwd = home if os.path.isdir(home) else "/"
        env = self.environment(cwd)
        master, slave = os.openpty()
        set_size(slave, 80, 24)
        pid = os.fork()
        if pid == 0:
            try:
                os.close(master)
                os.setsid()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(slave, fd)
                if slave > 2:
                    os.close(slave)
                # Python ignores these; an exec keeps ignored signals ignored.
                for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                os.chdir(cwd)
                os.execve(PERSON_SHELL, PERSON_SHELL_ARGV, env)
            except BaseException as error:
                try:
                    os.write(2, ("cannot start %s: %s\r\n" % (PERSON_SHELL, error)).encode())
                finally:
                    os._exit(127)
        os.close(slave)
        os.set_blocking(master, False)
        sock.setblocking(False)
        shell = Shell(sock, pid, master)
        self.shells[sock.fileno()] = shell
        self.running.add(pid)

    def drop(self, shell):
        """The client is gone: hang up the shell's session and forget the connection."""
        self.shells.pop(shell.sock.fileno(), None)
        try:
            shell.sock.close()
        except OSError:
            pass
        if shell.pid in self.running:
            hang_up(shell.pid)
        shell.close_master()

    def on_input(self, shell, data):
        shell.inbuf += data
        while len(shell.inbuf) >= 5:
            kind, length = struct.unpack(">BI", bytes(shell.inbuf[:5]))
            if length > MAX_FRAME:
                raise ValueError("frame too long")
            if len(shell.inbuf) < 5 + length:
                return
            payload = bytes(shell.inbuf[5 : 5 + length])
            del shell.inbuf[: 5 + length]
            if kind == FRAME_INPUT:
                if shell.master is not None:
                    shell.to_pty += payload
            elif kind == FRAME_RESIZE and length == 4:
                cols, rows = struct.unpack(">HH", payload)
                if shell.master is not None and cols > 0 and rows > 0:
                    set_size(shell.master, cols, rows)

    def reap(self):
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.running.discard(pid)
            for shell in self.shells.values():
                if shell.pid == pid:
                    shell.exited_at = time.monotonic()
                    # Whatever the shell left in its session goes with it.
                    hang_up(pid)

    def serve(self, listener, wake_r):
        lifeline = sys.stdin.fileno()
        while not self.stopping:
            readers = [listener, wake_r, lifeline]
            writers = []
            for shell in self.shells.values():
                if len(shell.to_pty) < HIGH_WATER:
                    readers.append(shell.sock)
                if shell.master is not None and len(shell.to_sock) < HIGH_WATER:
                    readers.append(shell.master)
                if shell.to_sock:
                    writers.append(shell.sock)
                if shell.master is not None and shell.to_pty:
                    writers.append(shell.master)
            readable, writable, _ = select.select(readers, writers, [], 0.5)
            if wake_r in readable:
                try:
                    os.read(wake_r, 512)
                except OSError:
                    pass
            self.reap()
            if lifeline in readable:
                try:
                    if not os.read(lifeline, 512):
                        return
                except OSError:
                    return
            if listener in readable:
                try:
                    sock, _ = listener.accept()
                except OSError:
                    sock = None
                if sock is not None:
                    try:
                        self.start_shell(sock)
                    except OSError as error:
                        log("cannot start a shell: %s" % error)
                        sock.close()
            for shell in list(self.shells.values()):
                self.pump(shell, readable, writable)

    def pump(self, shell, readable, writable):
        if shell.master is not None and shell.master in readable:
            try:
                data = os.read(shell.master, READ_SIZE)
            except OSError as error:
                data = b"" if error.errno == errno.EIO else None
            if data:
                shell.to_sock += data
            elif data == b"":
                shell.close_master()  # every holder of the PTY closed it
        if shell.master is not None and shell.exited_at and time.monotonic() - shell.exited_at > EXITED_DRAIN_S:
            shell.close_master()
        if shell.sock in readable:
            try:
                data = shell.sock.recv(READ_SIZE)
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":
                self.drop(shell)
                return
            if data:
                try:
                    self.on_input(shell, data)
                except ValueError:
                    self.drop(shell)
                    return
        if shell.to_pty and shell.master is not None and shell.master in writable:
            try:
                sent = os.write(shell.master, shell.to_pty)
                del shell.to_pty[:sent]
            except BlockingIOError:
                pass
            except OSError:
                shell.to_pty.clear()
        if shell.to_sock and shell.sock in writable:
            try:
                sent = shell.sock.send(shell.to_sock)
                del shell.to_sock[:sent]
            except BlockingIOError:
                pass
            except OSError:
                self.drop(shell)
                return
        if shell.master is None and not shell.to_sock:
            self.drop(shell)

    def stop(self):
        for shell in list(self.shells.values()):
            self.drop(shell)
        deadline = time.monotonic() + HANGUP_GRACE_S
        while self.running and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.02)
        for pid in list(self.running):
            for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass
        deadline = time.monotonic() + 1.0
        while self.running and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.02)


def main():
    conf = parse_args(sys.argv[1:])
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("terminal-pty-server.py: runs as the computer's user, never as root")
    session = conf["session"]
    if not os.path.isdir(session) or os.stat(session).st_uid != os.getuid():
        raise SystemExit("terminal-pty-server.py: the session folder must exist and be this user's")
    os.chmod(session, 0o700)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    server = Server(conf)

    def on_term(_signum, _frame):
        server.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.signal(signal.SIGCHLD, lambda _s, _f: None)
    os.umask(0o077)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(conf["socket"])
    except FileNotFoundError:
        pass
    listener.bind(conf["socket"])
    listener.listen(16)
    listener.setblocking(False)
    sys.stdout.write(json.dumps({"ready": True, "user": server.name, "nss": bool(server.nss_env)}) + "\n")
    sys.stdout.flush()
    try:
        server.serve(listener, wake_r)
    finally:
        listener.close()
        server.stop()
        shutil.rmtree(session, ignore_errors=True)


if __name__ == "__main__":
    main()
