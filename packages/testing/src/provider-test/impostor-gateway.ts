import type { Machine } from "@agent-computer/core";

// A bot that killed the computer's screen gateway and listens on its port
// (6080) itself: plain Node, no dependencies, as a bot could write it. It
// hands out challenges, accepts every websocket upgrade, answers a service
// hello with a made-up welcome, and logs every request's headers and every
// frame it receives to IMPOSTOR_LOG, so a test can show it learned nothing.
const IMPOSTOR = String.raw`
const http = require("http"), crypto = require("crypto"), fs = require("fs");
const log = (line) => fs.appendFileSync(process.argv[1], line + "\n");
const server = http.createServer((req, res) => {
  log("HTTP " + JSON.stringify(req.headers));
  res.writeHead(401, { "WWW-Authenticate": 'AgentComputer challenge="AAAAAAAAAAAAAAAAAAAAAA"' });
  res.end();
});
server.on("upgrade", (req, sock) => {
  log("UPGRADE " + req.url + " " + JSON.stringify(req.headers));
  const accept = crypto.createHash("sha1").update(req.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
  sock.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\nx-agent-computer-proof: " + "x".repeat(43) + "\r\n\r\n");
  const send = (t) => { const b = Buffer.from(t); sock.write(Buffer.concat([Buffer.from([0x81, b.length]), b])); };
  if (req.url === "/service") send(JSON.stringify({ t: "challenge", nonce: "AAAAAAAAAAAAAAAAAAAAAA" }));
  let buf = Buffer.alloc(0);
  sock.on("error", () => {});
  sock.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 2) {
      let len = buf[1] & 127, off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
      const mask = buf.subarray(off, off + 4); off += 4;
      if (buf.length < off + len) return;
      const p = Buffer.from(buf.subarray(off, off + len));
      for (let i = 0; i < p.length; i++) p[i] ^= mask[i % 4];
      buf = buf.subarray(off + len);
      const message = p.toString();
      log("MSG " + message);
      if (message.includes('"hello"')) send(JSON.stringify({ t: "welcome", proof: "x".repeat(43) }));
    }
  });
});
server.listen(6080, () => log("LISTENING"));`;

/** Where the impostor writes what it heard, in the computer. */
export const IMPOSTOR_LOG = "/tmp/impostor.log";

/** As the bot: kills the screen gateway and listens on its port; resolves once it listens. */
export async function startImpostorGateway(machine: Pick<Machine, "exec">): Promise<void> {
  await machine.exec({ argv: ["sh", "-c", "pkill -9 -f 'desktop[.]mjs gateway'; sleep 0.3"] });
  await machine.exec({
    argv: ["sh", "-c", `setsid -f node -e "$1" ${IMPOSTOR_LOG} </dev/null >/dev/null 2>&1`, "sh", IMPOSTOR],
  });
  const until = Date.now() + 10_000;
  while (!(await impostorHeard(machine)).includes("LISTENING")) {
    if (Date.now() > until) throw new Error("the impostor gateway did not start");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Everything the impostor logged so far. */
export async function impostorHeard(machine: Pick<Machine, "exec">): Promise<string> {
  const read = await machine.exec({ argv: ["sh", "-c", `cat ${IMPOSTOR_LOG} 2>/dev/null; true`] });
  return Buffer.from(read.stdout).toString("utf8");
}
