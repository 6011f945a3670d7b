import { connect, createServer, type Server } from "node:net";

/** A TCP relay in front of a local S3 server that counts the bytes the server sends back (what a client downloads). */
export interface ByteCountingRelay {
  readonly port: number;
  /** Bytes the server sent through the relay so far, headers included. */
  sent(): number;
  close(): Promise<void>;
}

export async function startByteCountingRelay(targetPort: number): Promise<ByteCountingRelay> {
  let sent = 0;
  const relay: Server = createServer((client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    upstream.on("data", (chunk: Buffer) => {
      sent += chunk.length;
    });
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on("error", close);
      socket.on("close", close);
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  return {
    port: (relay.address() as { port: number }).port,
    sent: () => sent,
    close: () => new Promise<void>((resolve) => relay.close(() => resolve())),
  };
}
