// A listener a hostile bot starts on its computer, for settings it plants
// where the display's programs read them (a proxy in the browser profile,
// a secure-DNS template in its Local State): each connection it gets is a
// line in PLANTED_LOG, and it answers an empty HTTP 200 so a browser that
// was steered to it ends its request.

/** One line per connection the planted listener got. */
export const PLANTED_LOG = "/tmp/planted-listener.log";

/** Shell (run as the bot): how many connections the planted listener got. */
export const PLANTED_HEARD = `cat ${PLANTED_LOG} 2>/dev/null | wc -l`;

/** Shell (run as the bot): stops the planted listener. */
export const STOP_PLANTED = "pkill -f planted-listene[r]";

/**
 * Shell (run as the bot): starts the listener on `host:port` in the
 * background, then exits 0 once it listens (1 after 5 s).
 */
export function startPlantedListener(host: string, port: number): string {
  const script = [
    "import socket",
    "s = socket.socket()",
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)",
    `s.bind(("${host}", ${port}))`,
    "s.listen(16)",
    "while True:",
    "  c, _ = s.accept()",
    `  open("${PLANTED_LOG}", "a").write("connection\\n")`,
    '  c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n")',
    "  c.close()",
  ].join("\n");
  return `rm -f ${PLANTED_LOG}; setsid nohup python3 -c '${script}' >/dev/null 2>&1 </dev/null &
    for i in $(seq 1 50); do grep -qi ":$(printf %04X ${port}) 00000000:0000 0A" /proc/net/tcp && exit 0; sleep 0.1; done; exit 1`;
}
