import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, connect, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createLoopbackProxy, loopbackHostOf, parseConnectRequest } from "../computer/desktop/loopback-proxy.js";

// The computer's loopback proxy (computer/desktop/loopback-proxy.ts), which a
// display in a container of its own sends loopback URLs to, over real
// sockets on this host's loopback: it opens loopback destinations and
// refuses every other one before connecting anywhere.
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function listening(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** Reads from `socket` until `count` bytes came or it closed. */
function read(socket: Socket, count: number): Promise<Buffer> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    const done = () => {
      socket.off("data", onData);
      resolve(got);
    };
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length >= count) done();
    };
    socket.on("data", onData);
    socket.once("close", done);
  });
}

/** A SOCKS5 CONNECT to a named destination, as Chromium sends for `socks5://`. */
const connectByName = (host: string, port: number) =>
  Buffer.concat([
    Buffer.from([5, 1, 0, 3, host.length]),
    Buffer.from(host, "latin1"),
    Buffer.from([port >> 8, port & 255]),
  ]);

async function socksClient(proxyPort: number, methods = [0]): Promise<{ socket: Socket; greeting: Buffer }> {
  const socket = connect(proxyPort, "127.0.0.1");
  socket.write(Buffer.from([5, methods.length, ...methods]));
  return { socket, greeting: await read(socket, 2) };
}

describe("loopback proxy", () => {
  it("carries a request to a loopback server, named or numeric", async () => {
    const page = await listening(createHttpServer((_req, res) => res.end("served in the computer")));
    const proxy = await listening(createLoopbackProxy());
    for (const destination of ["localhost", "127.0.0.1", "app.localhost"]) {
      const { socket, greeting } = await socksClient(proxy);
      expect([...greeting]).toEqual([5, 0]);
      socket.write(connectByName(destination, page));
      const reply = await read(socket, 10);
      expect(reply[1], destination).toBe(0);
      socket.write("GET / HTTP/1.0\r\nHost: x\r\n\r\n");
      const response = (await read(socket, Number.POSITIVE_INFINITY)).toString();
      expect(response).toContain("served in the computer");
    }
  });

  it("refuses every destination off the computer's loopback, and connects nowhere", async () => {
    let reached = 0;
    const elsewhere = await listening(
      createHttpServer((_req, res) => {
        reached++;
        res.end("not for the display");
      }),
    );
    const proxy = await listening(createLoopbackProxy());
    // The name the computer answers to on its pair network, another container's address, a public name.
    for (const destination of ["computer", "172.17.0.1", "example.com", "localhost.example.com", "127.0.0.1.nip.io"]) {
      const { socket } = await socksClient(proxy);
      socket.write(connectByName(destination, elsewhere));
      // Read until the proxy closes: the refusal is all it sends.
      const reply = await read(socket, Number.POSITIVE_INFINITY);
      expect([...reply.subarray(0, 2)], destination).toEqual([5, 2]);
      expect(reply.length, destination).toBe(10);
    }
    expect(reached).toBe(0);
  });

  it("refuses a client that offers no method it speaks, and commands other than CONNECT", async () => {
    const proxy = await listening(createLoopbackProxy());
    const { greeting } = await socksClient(proxy, [2]);
    expect([...greeting]).toEqual([5, 0xff]);
    const { socket } = await socksClient(proxy);
    socket.write(Buffer.from([5, 2, 0, 1, 127, 0, 0, 1, 0, 80])); // BIND
    expect((await read(socket, 10))[1]).toBe(7);
  });

  it("reads requests split across packets, and tells loopback hosts from others", () => {
    const whole = connectByName("localhost", 8080);
    expect(parseConnectRequest(whole.subarray(0, 7))).toBeUndefined();
    expect(parseConnectRequest(whole)).toEqual({ host: "localhost", port: 8080, length: whole.length });
    const ipv6 = Buffer.from([5, 1, 0, 4, ...new Array(15).fill(0), 1, 0x1f, 0x90]);
    expect(parseConnectRequest(ipv6)).toMatchObject({ host: "::1", port: 8080 });
    expect(loopbackHostOf("LOCALHOST")).toBe("localhost");
    expect(loopbackHostOf("127.8.9.10")).toBe("127.8.9.10");
    expect(loopbackHostOf("::1")).toBe("::1");
    for (const other of ["10.0.0.1", "128.0.0.1", "localhost.evil", "::2", "1127.0.0.1"]) {
      expect(loopbackHostOf(other), other).toBeUndefined();
    }
  });
});
