import net from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Opens `target:port` through a SOCKS5 server without authentication
 * (RFC 1928): how the proxy reaches a computer's own loopback, through the
 * computer's loopback proxy (desktop-runtime's loopback-proxy.ts), for the
 * display's browser (README, "Loopback"). Resolves once the server has
 * connected; the socket then carries the target's bytes.
 */
export function connectThroughSocks5(
  server: { host: string; port: number },
  target: string,
  port: number,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, server.host);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.once("error", fail);
    let stage: "greeting" | "reply" = "greeting";
    let pending = Buffer.alloc(0);
    socket.on("connect", () => socket.write(Buffer.from([5, 1, 0])));
    const onData = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (stage === "greeting") {
        if (pending.length < 2) return;
        if (pending[0] !== 5 || pending[1] !== 0) return fail(new Error("the SOCKS server refused to talk"));
        pending = pending.subarray(2);
        stage = "reply";
        socket.write(connectRequest(target, port));
      }
      if (pending.length < 5) return;
      if (pending[1] !== 0) return fail(new Error(`the SOCKS server could not connect (reply ${pending[1]})`));
      const kind = pending[3];
      const length = kind === 1 ? 4 : kind === 4 ? 16 : 1 + (pending[4] ?? 0);
      if (pending.length < 4 + length + 2) return;
      socket.off("data", onData);
      socket.off("error", fail);
      const rest = pending.subarray(4 + length + 2);
      socket.pause();
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

function connectRequest(target: string, port: number): Buffer {
  const portBytes = Buffer.from([port >> 8, port & 255]);
  if (net.isIP(target)) {
    const bytes = ipaddr.parse(target).toByteArray();
    return Buffer.concat([Buffer.from([5, 1, 0, bytes.length === 4 ? 1 : 4]), Buffer.from(bytes), portBytes]);
  }
  const name = Buffer.from(target);
  return Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, portBytes]);
}
