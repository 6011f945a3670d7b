/**
 * The program of a sandbox's network fence (network-fence.ts): run as root
 * with NET_ADMIN and SYS_ADMIN in a container of its own, on a network of
 * its own, with the sandbox container's network namespace bound in
 * (/run/sandbox-netns). It enters that namespace only to put its rules in
 * and open its listeners there, and dials every upstream connection from
 * its own namespace, as a service's egress proxy dials from the host: the
 * sandbox (no NET_ADMIN, its own PID namespace) can neither change the
 * rules, nor signal the proxy, nor make a connection of its own look like
 * the proxy's (a socket mark, which CAP_NET_RAW may set, would not do).
 *
 * Its rules are E2B's orchestrator's (e2b-dev/infra), the most detailed a
 * hosted service publishes; another service's emulator maps its settings
 * onto them (FenceRules) and says beside the mapping where its service
 * differs. Cited beside each part:
 *   - packages/orchestrator/pkg/sandbox/network/firewall.go installRules:
 *     1 established/related accepted, 3 the always-denied ranges dropped
 *     (all protocols), 4/5 non-TCP to the allowed / denied CIDRs
 *     accepted / dropped, default accept; here in mangle OUTPUT, which, as
 *     the orchestrator's prerouting filter (priority -150), comes before the
 *     TCP redirect;
 *   - pkg/tcpfirewall/proxy.go: every TCP connection redirected by its
 *     destination port, 80 to a Host-header listener, 443 to an SNI
 *     listener, any other to a CIDR-only one;
 *   - pkg/tcpfirewall/handlers.go isEgressAllowed: an allowed domain
 *     (matchDomain) first, then an allowed CIDR, then a denied CIDR, default
 *     allow; a domain match dials the name itself, never the address the
 *     sandbox asked for, and refuses an address in the always-denied ranges
 *     (proxyWithIPVerification); a refusal closes the accepted connection.
 * Not the orchestrator's: allowedCidrPorts, CIDRs let through on one port
 * (TCP judged beside the allowed CIDRs, UDP by a rule beside theirs), for a
 * service whose allow rules name a port (CreateOS's `host:port`).
 * Settings come as JSON in FENCE_CONFIG. Python 3's standard library only.
 */
export const NETWORK_FENCE_SCRIPT = String.raw`
import ctypes, json, os, socket, struct, subprocess, sys, threading

CONFIG = json.loads(os.environ["FENCE_CONFIG"])
CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)

def enter(fd):
    if LIBC.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")
PORTS = {"http": 50080, "tls": 50443, "other": 50000}

def ipv4_range(text):
    address, _, bits = text.partition("/")
    parts = [int(p) for p in address.split(".")]
    value = (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]
    size = 1 << (32 - int(bits or 32))
    first = value - value % size
    return first, first + size - 1

def in_any(ip, ranges):
    value = struct.unpack("!I", socket.inet_aton(ip))[0]
    return any(first <= value <= last for first, last in ranges)

ALWAYS_DENIED = [ipv4_range(c) for c in CONFIG["alwaysDenied"]]
STAND_INS = [ipv4_range(c) for c in CONFIG["publicStandIns"]]
ALLOWED = [ipv4_range(c) for c in CONFIG["allowedCidrs"]]
ALLOWED_ON_PORT = [(ipv4_range(e["cidr"]), e["port"]) for e in CONFIG.get("allowedCidrPorts") or []]
DENIED = [ipv4_range(c) for c in CONFIG["deniedCidrs"]]
DOMAINS = CONFIG["allowedDomains"]
HOSTS = CONFIG["hosts"]

def always_denied(ip):
    return in_any(ip, ALWAYS_DENIED) and not in_any(ip, STAND_INS)

def run(*argv):
    subprocess.run(argv, check=True)

# The rules on the way out of the sandbox's namespace, after the mangle chains: (command, table, chain, match).
def tail_rules():
    return [
        ("iptables", "mangle", "OUTPUT", ["-j", "FENCE_FILTER"]),
        ("iptables", "nat", "OUTPUT", ["-o", "lo", "-j", "RETURN"]),
        ("iptables", "nat", "OUTPUT", ["-p", "tcp", "--dport", "80", "-j", "REDIRECT", "--to-ports", str(PORTS["http"])]),
        ("iptables", "nat", "OUTPUT", ["-p", "tcp", "--dport", "443", "-j", "REDIRECT", "--to-ports", str(PORTS["tls"])]),
        ("iptables", "nat", "OUTPUT", ["-p", "tcp", "-j", "REDIRECT", "--to-ports", str(PORTS["other"])]),
        # A new TCP connection that escaped the redirect (a raw socket) goes nowhere. (A redirected one
        # keeps its first route's interface here but is addressed to 127.0.0.1 by now.)
        ("iptables", "filter", "OUTPUT", ["-p", "tcp", "!", "-o", "lo", "!", "-d", "127.0.0.0/8", "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"]),
        # The kit's choice: the orchestrator's sets are IPv4; a fenced sandbox here gets no IPv6 way out.
        ("ip6tables", "filter", "OUTPUT", ["-o", "lo", "-j", "ACCEPT"]),
        ("ip6tables", "filter", "OUTPUT", ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"]),
        ("ip6tables", "filter", "OUTPUT", ["-j", "DROP"]),
    ]

def remove_previous():
    # A fence before this one in the same namespace (a service whose rules change while the sandbox
    # runs): its rules out first, so the new ones are the only ones.
    for command, table, chain, match in tail_rules():
        while subprocess.run([command, "-t", table, "-D", chain, *match], capture_output=True).returncode == 0:
            pass
    for chain in ("FENCE_FILTER", "FENCE_PREDEFINED"):
        subprocess.run(["iptables", "-t", "mangle", "-F", chain], capture_output=True)
    for chain in ("FENCE_FILTER", "FENCE_PREDEFINED"):
        subprocess.run(["iptables", "-t", "mangle", "-X", chain], capture_output=True)

def install_rules():
    remove_previous()
    run("iptables", "-t", "mangle", "-N", "FENCE_PREDEFINED")
    for cidr in CONFIG["publicStandIns"]:
        run("iptables", "-t", "mangle", "-A", "FENCE_PREDEFINED", "-d", cidr, "-j", "RETURN")
    for cidr in CONFIG["alwaysDenied"]:
        run("iptables", "-t", "mangle", "-A", "FENCE_PREDEFINED", "-d", cidr, "-j", "DROP")
    run("iptables", "-t", "mangle", "-N", "FENCE_FILTER")
    run("iptables", "-t", "mangle", "-A", "FENCE_FILTER", "-o", "lo", "-j", "RETURN")
    run("iptables", "-t", "mangle", "-A", "FENCE_FILTER", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN")
    run("iptables", "-t", "mangle", "-A", "FENCE_FILTER", "-j", "FENCE_PREDEFINED")
    for cidr in CONFIG["allowedCidrs"]:
        run("iptables", "-t", "mangle", "-A", "FENCE_FILTER", "!", "-p", "tcp", "-d", cidr, "-j", "RETURN")
    for entry in CONFIG.get("allowedCidrPorts") or []:
        run("iptables", "-t", "mangle", "-A", "FENCE_FILTER", "-p", "udp", "-d", entry["cidr"], "--dport", str(entry["port"]), "-j", "RETURN")
    for cidr in CONFIG["deniedCidrs"]:
        run("iptables", "-t", "mangle", "-A", "FENCE_FILTER", "!", "-p", "tcp", "-d", cidr, "-j", "DROP")
    for command, table, chain, match in tail_rules():
        run(command, "-t", table, "-A", chain, *match)

def match_domain(hostname, pattern):
    hostname, pattern = hostname.lower(), pattern.lower()
    if pattern == "" or hostname == "":
        return False
    if pattern == hostname or pattern == "*":
        return True
    return pattern.startswith("*.") and hostname.endswith(pattern[1:])

def egress_allowed(hostname, ip, port):
    if hostname and any(match_domain(hostname, d) for d in DOMAINS):
        return True, "domain"
    if in_any(ip, ALLOWED):
        return True, "cidr"
    if any(p == port and in_any(ip, [r]) for r, p in ALLOWED_ON_PORT):
        return True, "cidr-port"
    if in_any(ip, DENIED):
        return False, "cidr"
    return True, "none"

def log(**fields):
    print(json.dumps(fields), flush=True)

def original_destination(conn):
    raw = conn.getsockopt(socket.SOL_IP, 80, 16)  # SO_ORIGINAL_DST
    port, packed = struct.unpack("!2xH4s8x", raw)
    return socket.inet_ntoa(packed), port

def read_head(conn, kind):
    conn.settimeout(10)
    data = b""
    try:
        if kind == "http":
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        elif kind == "tls":
            while len(data) < 5 or len(data) < 5 + struct.unpack("!H", data[3:5])[0]:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
                if len(data) > 20000:
                    break
    except socket.timeout:
        pass
    conn.settimeout(None)
    return data

def http_host(data):
    for line in data.split(b"\r\n")[1:]:
        if line == b"":
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"host":
            host = value.strip().decode("latin-1")
            if host.startswith("["):
                return host
            return host.rsplit(":", 1)[0] if ":" in host else host
    return ""

def tls_sni(data):
    try:
        if data[0] != 0x16 or data[5] != 0x01:
            return ""
        at = 5 + 4 + 2 + 32
        at += 1 + data[at]
        at += 2 + struct.unpack("!H", data[at:at + 2])[0]
        at += 1 + data[at]
        end = at + 2 + struct.unpack("!H", data[at:at + 2])[0]
        at += 2
        while at + 4 <= end:
            kind, length = struct.unpack("!HH", data[at:at + 4])
            at += 4
            if kind == 0:
                size = struct.unpack("!H", data[at + 3:at + 5])[0]
                return data[at + 5:at + 5 + size].decode("ascii")
            at += length
    except (IndexError, struct.error, UnicodeDecodeError):
        pass
    return ""

def dial(address, port):
    upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    upstream.settimeout(10)
    upstream.connect((address, port))
    upstream.settimeout(None)
    return upstream

def resolve(hostname):
    if hostname.lower() in HOSTS:
        return [HOSTS[hostname.lower()]]
    return sorted({info[4][0] for info in socket.getaddrinfo(hostname, None, socket.AF_INET, socket.SOCK_STREAM)})

def pipe(source, target):
    try:
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            target.sendall(chunk)
    except OSError:
        pass
    for sock in (target,):
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

def handle(conn, kind):
    upstream = None
    try:
        ip, port = original_destination(conn)
        if ip.startswith("127."):
            # Not redirected: the sandbox dialled the listener itself; nothing to pass on.
            return
        head = read_head(conn, kind)
        hostname = http_host(head) if kind == "http" else tls_sni(head) if kind == "tls" else ""
        allowed, match = egress_allowed(hostname, ip, port)
        if allowed and match == "domain":
            addresses = [a for a in resolve(hostname) if not always_denied(a)]
            if not addresses:
                log(decision="blocked", reason="resolved-denied", host=hostname, ip=ip, port=port)
                return
            upstream = dial(addresses[0], port)
        elif allowed:
            upstream = dial(ip, port)
        else:
            log(decision="blocked", reason=match, host=hostname, ip=ip, port=port)
            return
        log(decision="allowed", match=match, host=hostname, ip=ip, port=port)
        upstream.sendall(head)
        back = threading.Thread(target=pipe, args=(upstream, conn), daemon=True)
        back.start()
        pipe(conn, upstream)
        back.join()
    except OSError as error:
        log(decision="error", error=str(error))
    finally:
        for sock in (conn, upstream):
            if sock is not None:
                sock.close()

def serve(listener, kind):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn, kind), daemon=True).start()

def listen(kind):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", PORTS[kind]))
    listener.listen(128)
    return threading.Thread(target=serve, args=(listener, kind), daemon=True)

# Namespaces are per thread, and a thread or child starts in its maker's: the rules (iptables runs
# as a child) and the listeners go into the sandbox's, everything started afterwards is in our own.
own = os.open("/proc/self/ns/net", os.O_RDONLY)
enter(os.open("/run/sandbox-netns", os.O_RDONLY))
install_rules()
threads = [listen(kind) for kind in PORTS]
enter(own)
for thread in threads:
    thread.start()
print("fence ready", flush=True)
for thread in threads:
    thread.join()
`;
