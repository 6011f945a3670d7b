// The toolbox daemon's stand-in inside a sandbox's container. Daytona's
// daemon is a process in the sandbox that owns the session shells and reads
// and writes their files; the emulator reaches a container only through
// `docker exec`, and one exec per file operation made every command cost
// four of them. So one long-lived Python process per container does, on
// the emulator's requests (JSON lines on stdin, answers as JSON lines on
// stdout), what the daemon does there: each operation's behaviour is cited
// where it is modelled, in daemon-session.ts and daemon-scripts.ts. None of
// it is the daemon's code.

/**
 * Requests: {"id", "op", ...}. Answers: {"id", "ok": true, ...} or
 * {"id", "ok": false, "status", "message"}; a follow also sends
 * {"id", "chunk": <base64>} for each read and {"id", "end": true} last.
 *
 * - open {session, dir}: a session shell (create.go Create): GetShell's
 *   choice (get_shell.go), its own process group, the container's
 *   environment, no output; the session's folder made. Answers its pid.
 * - exec {session, files, command, wrapper}: the command's folder, an empty
 *   output.log and cmd.sh (mode 600) (execute.go:44-61), then the wrapper
 *   written to the shell. Answers at once.
 * - wait {exitCode, log}: every 50 ms until the exit-code file holds a value
 *   (execute.go:90-121); answers it and the log.
 * - read {path}: a file's bytes, or ok false when it cannot be read.
 * - follow {log, exitCode, follow, dir}: the log websocket's reader
 *   (log_reader.go ReadLogWithExitCode): reads of at most 1024 bytes; with
 *   follow, done after 50 empty reads 20 ms apart once the exit-code file
 *   holds a value, or once the session's folder is gone. cancel {target}
 *   stops one.
 * - input {pipe, log, echo, data}: input.go SendInput: the FIFO opened for
 *   writing (500 when it cannot be), the data with a newline added, echoed
 *   to the log after the stdout label unless suppressed.
 * - delete {session, dir, grace}: delete.go terminateSession: SIGTERM to the
 *   group and every descendant, then every 100 ms for the grace period
 *   until the shell is gone or childless, else SIGKILL; the folder removed.
 * - alive {session}: whether the session's shell still runs (input.go:25).
 */
export const DAEMON_STAND_IN = String.raw`import base64, json, os, shutil, signal, subprocess, sys, threading, time
out_lock = threading.Lock()
shells = {}
cancelled = set()
def send(message):
    line = (json.dumps(message) + "\n").encode()
    with out_lock:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
def fail(rid, status, message):
    send({"id": rid, "ok": False, "status": status, "message": message})
def pick_shell():
    try:
        listed = "".join(l for l in open("/etc/shells") if l.strip() and not l.startswith("#"))
    except OSError:
        listed = ""
    for candidate in ("/usr/bin/zsh", "/bin/zsh", "/usr/bin/bash", "/bin/bash"):
        if candidate in listed:
            return candidate
    return "sh"
SHELL = pick_shell()
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
def op_open(r):
    os.makedirs(r["dir"], 0o755, exist_ok=True)
    devnull = open(os.devnull, "wb")
    shell = subprocess.Popen([SHELL], stdin=subprocess.PIPE, stdout=devnull, stderr=devnull, preexec_fn=lambda: os.setpgid(0, 0))
    devnull.close()
    shells[r["session"]] = shell
    send({"id": r["id"], "ok": True, "pid": shell.pid})
def op_exec(r):
    f = r["files"]
    shell = shells.get(r["session"])
    try:
        os.makedirs(f["dir"], 0o755, exist_ok=True)
        open(f["log"], "wb").close()
        fd = os.open(f["script"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, r["command"].encode())
        os.close(fd)
    except OSError as e:
        return fail(r["id"], 400, "failed to write command file: %s" % e.strerror)
    try:
        shell.stdin.write(r["wrapper"].encode())
        shell.stdin.flush()
    except (OSError, AttributeError) as e:
        return fail(r["id"], 400, "failed to write command: %s" % e)
    send({"id": r["id"], "ok": True})
def op_wait(r):
    while True:
        try:
            with open(r["exitCode"]) as f:
                code = f.read().strip()
            if code:
                break
        except OSError:
            pass
        time.sleep(0.05)
    with open(r["log"], "rb") as f:
        log = f.read()
    send({"id": r["id"], "ok": True, "exitCode": int(code), "log": base64.b64encode(log).decode()})
def op_read(r):
    try:
        with open(r["path"], "rb") as f:
            data = f.read()
    except OSError as e:
        return fail(r["id"], 404, e.strerror)
    send({"id": r["id"], "ok": True, "data": base64.b64encode(data).decode()})
def op_follow(r):
    rid = r["id"]
    try:
        fd = os.open(r["log"], os.O_RDONLY)
    except OSError as e:
        return fail(rid, 404, e.strerror)
    send({"id": rid, "ok": True})
    idle = 0
    while rid not in cancelled:
        data = os.read(fd, 1024)
        if data:
            idle = 0
            send({"id": rid, "chunk": base64.b64encode(data).decode()})
            continue
        if not r["follow"] or not os.path.isdir(r["dir"]):
            break
        idle += 1
        if idle >= 50:
            idle = 0
            try:
                with open(r["exitCode"]) as f:
                    if f.read().strip():
                        break
            except OSError:
                pass
        time.sleep(0.02)
    os.close(fd)
    cancelled.discard(rid)
    send({"id": rid, "end": True})
def op_cancel(r):
    cancelled.add(r["target"])
    send({"id": r["id"], "ok": True})
def op_input(r):
    data = r["data"].encode()
    if not data.endswith(b"\n"):
        data += b"\n"
    try:
        fd = os.open(r["pipe"], os.O_WRONLY)
    except OSError as e:
        return fail(r["id"], 500, "failed to open input pipe: %s" % e.strerror)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)
    if r["echo"]:
        try:
            with open(r["log"], "ab") as log:
                log.write(b"\x01\x01\x01" + data)
        except OSError:
            pass
    send({"id": r["id"], "ok": True})
def op_delete(r):
    shell = shells.pop(r["session"], None)
    if shell is not None:
        def hit(sig):
            try:
                os.killpg(shell.pid, sig)
            except OSError:
                pass
            signal_tree(shell.pid, sig)
        hit(signal.SIGTERM)
        deadline = time.time() + r["grace"]
        ended = False
        while time.time() < deadline:
            time.sleep(0.1)
            if shell.poll() is not None or not children(shell.pid):
                ended = True
                break
        if not ended:
            hit(signal.SIGKILL)
        threading.Thread(target=shell.wait, daemon=True).start()
    shutil.rmtree(r["dir"], ignore_errors=True)
    send({"id": r["id"], "ok": True})
def op_alive(r):
    shell = shells.get(r["session"])
    send({"id": r["id"], "ok": True, "alive": shell is not None and shell.poll() is None})
OPS = {"open": op_open, "exec": op_exec, "wait": op_wait, "read": op_read, "follow": op_follow, "cancel": op_cancel, "input": op_input, "delete": op_delete, "alive": op_alive}
QUICK = {"open", "exec", "read", "cancel", "alive"}
def serve(r):
    try:
        OPS[r["op"]](r)
    except Exception as e:
        fail(r["id"], 500, "%s: %s" % (type(e).__name__, e))
for line in sys.stdin.buffer:
    request = json.loads(line)
    if request["op"] in QUICK:
        serve(request)
    else:
        threading.Thread(target=serve, args=(request,), daemon=True).start()`;
