import { randomBytes } from "node:crypto";
import type { WebSocket } from "ws";

/**
 * A service's socket.io channel as its SDK listens on it: socket.io v5 over
 * engine.io v4, websocket transport only. The handshake, CONNECT (its auth
 * object checked by `admit`), pings, and events sent to every admitted client.
 */
export class SocketIoChannel {
  private readonly clients = new Set<WebSocket>();

  constructor(private readonly admit: (auth: Record<string, unknown>) => boolean) {}

  /** Clients that passed CONNECT and are still connected. */
  get size(): number {
    return this.clients.size;
  }

  /** Serves a websocket the upgrade gave (`/socket.io/?EIO=4&transport=websocket`). */
  accept(ws: WebSocket): void {
    ws.send(
      `0${JSON.stringify({ sid: randomBytes(8).toString("hex"), upgrades: [], pingInterval: 25_000, pingTimeout: 60_000, maxPayload: 1_000_000 })}`,
    );
    const ping = setInterval(() => ws.send("2"), 25_000);
    ping.unref();
    ws.on("message", (data) => {
      const text = data.toString();
      // "3" (pong) and anything else: nothing to do.
      if (!text.startsWith("40")) return;
      const auth = text.length > 2 ? (JSON.parse(text.slice(2)) as Record<string, unknown>) : {};
      if (!this.admit(auth)) {
        ws.send(`44${JSON.stringify({ message: "Unauthorized" })}`);
        return;
      }
      this.clients.add(ws);
      ws.send(`40${JSON.stringify({ sid: randomBytes(8).toString("hex") })}`);
    });
    ws.once("close", () => {
      clearInterval(ping);
      this.clients.delete(ws);
    });
  }

  /** An EVENT packet (engine.io MESSAGE 4, socket.io EVENT 2: `42[name, payload]`) to every admitted client. */
  emit(name: string, payload: unknown): void {
    const packet = `42${JSON.stringify([name, payload])}`;
    for (const client of this.clients) client.send(packet);
  }
}
