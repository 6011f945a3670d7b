// The bench's S3 server in its own process, so the checkpointing process's
// CPU and peak RSS are its own. In front of it a TCP relay counts the bytes
// clients send to the server and the server sends back (what "uploaded"
// and "downloaded" mean in the bench); GET /counters on the control port
// reads them. Prints "<s3 port> <control port>", serves until killed.
import { createServer as createHttpServer } from "node:http";
import { connect, createServer } from "node:net";
import S3rver from "s3rver";

const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: process.argv[2] as string });
const { port } = (await server.run()) as { port: number };
const counters = { received: 0, sent: 0 };
const relay = createServer((client) => {
  const upstream = connect(port, "127.0.0.1");
  client.on("data", (chunk: Buffer) => {
    counters.received += chunk.length;
  });
  upstream.on("data", (chunk: Buffer) => {
    counters.sent += chunk.length;
  });
  client.pipe(upstream).pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", close);
  upstream.on("error", close);
  client.on("close", close);
  upstream.on("close", close);
});
await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
const control = createHttpServer((_request, response) => response.end(JSON.stringify(counters)));
await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
const portOf = (s: { address(): unknown }) => (s.address() as { port: number }).port;
process.stdout.write(`${portOf(relay)} ${portOf(control)}\n`);
