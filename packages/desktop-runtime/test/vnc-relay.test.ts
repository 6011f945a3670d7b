import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { reportMissingProvider } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newVncPassword, passwordOfVncFile, vncPasswordFile } from "../computer/desktop/vnc-auth.js";
import { relayToVnc } from "../computer/desktop/vnc-relay.js";
import { accepts } from "../computer/desktop/vnc-servers.js";

describe("VNC password files", () => {
  it("writes what x11vnc -storepasswd writes, and reads it back", () => {
    // `x11vnc -storepasswd abcdefgh FILE` in the computer image (x11vnc 0.9.16), measured 2026-12-06.
    expect(vncPasswordFile(Buffer.from("abcdefgh")).toString("hex")).toBe("db8ab02565e3b4c2");
    const password = newVncPassword();
    expect(password).toHaveLength(8);
    expect(password.includes(0)).toBe(false);
    expect(passwordOfVncFile(vncPasswordFile(password))).toEqual(password);
  });
});

// The gateway's relay against a real x11vnc with a password (the host's, as
// host computers run it; the image's is exercised by the Docker suites):
// the viewer gets x11vnc's password-less handshake at every RFB version it
// speaks, and a wrong password reaches no viewer.
const missing = ["Xvfb", "x11vnc"].filter((program) => spawnSync("which", [program]).status !== 0);
if (missing.length > 0) {
  reportMissingProvider("vnc relay", {
    kind: "display stack (Xvfb, x11vnc)",
    missing: `${missing.join(", ")} not found`,
  });
} else {
  describe("vnc relay", () => {
    const dir = mkdtempSync(join(tmpdir(), "vnc-relay-"));
    const password = newVncPassword();
    const processes: ChildProcess[] = [];
    let vncPort = 0;
    let gateway: Server;
    let gatewayPort = 0;
    let targetPassword = password;
    const failures: string[] = [];

    beforeAll(async () => {
      // Xvfb picks a free display and names it on fd 3 once it accepts clients.
      const xvfb = spawn("Xvfb", ["-displayfd", "3", "-screen", "0", "320x200x24", "-nolisten", "tcp"], {
        stdio: ["ignore", "ignore", "ignore", "pipe"],
      });
      processes.push(xvfb);
      const display = await new Promise<string>((resolve, reject) => {
        let said = "";
        xvfb.stdio[3]?.on("data", (chunk: Buffer) => {
          said += chunk.toString();
          if (said.includes("\n")) resolve(`:${said.trim()}`);
        });
        xvfb.once("exit", (code) => reject(new Error(`Xvfb exited (${code})`)));
      });
      const passwordFile = join(dir, "passwd");
      writeFileSync(passwordFile, vncPasswordFile(password), { mode: 0o600 });
      vncPort = await freePort();
      const vncArgs = ["-display", display, "-rfbport", String(vncPort), "-localhost", "-noipv6", "-shared"];
      processes.push(
        spawn("x11vnc", [...vncArgs, "-forever", "-rfbauth", passwordFile, "-norc", "-noncache"], { stdio: "ignore" }),
      );
      await until(() => accepts(vncPort));
      gateway = createServer((viewer) => {
        viewer.on("error", () => viewer.destroy());
        relayToVnc(viewer, { port: vncPort, password: targetPassword }).catch((error: Error) =>
          failures.push(error.message),
        );
      });
      await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
      gatewayPort = (gateway.address() as { port: number }).port;
    }, 30_000);

    afterAll(() => {
      gateway?.close();
      for (const p of processes) p.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    });

    it("gives an RFB 3.8 viewer security type None and the display's ServerInit", async () => {
      const viewer = await Viewer.connect(gatewayPort);
      expect((await viewer.read(12)).toString()).toBe("RFB 003.008\n");
      viewer.send("RFB 003.008\n");
      expect([...(await viewer.read(2))]).toEqual([1, 1]);
      viewer.send([1]);
      expect((await viewer.read(4)).readUInt32BE(0)).toBe(0);
      viewer.send([1]);
      const init = await viewer.read(24);
      expect([init.readUInt16BE(0), init.readUInt16BE(2)]).toEqual([320, 200]);
      await viewer.read(init.readUInt32BE(20));
      // FramebufferUpdateRequest: the answer is a FramebufferUpdate (type 0).
      viewer.send([3, 0, 0, 0, 0, 0, 0, 16, 0, 16]);
      expect((await viewer.read(1))[0]).toBe(0);
      viewer.close();
    });

    it("answers RFB 3.7 and 3.3 viewers as x11vnc without a password does", async () => {
      const v37 = await Viewer.connect(gatewayPort);
      await v37.read(12);
      v37.send("RFB 003.007\n");
      expect([...(await v37.read(2))]).toEqual([1, 1]);
      v37.send([1, 1]); // None, then ClientInit: 3.7 has no SecurityResult after None
      expect((await v37.read(24)).readUInt16BE(0)).toBe(320);
      v37.close();
      const v33 = await Viewer.connect(gatewayPort);
      await v33.read(12);
      v33.send("RFB 003.003\n");
      expect((await v33.read(4)).readUInt32BE(0)).toBe(1);
      v33.send([1]);
      expect((await v33.read(24)).readUInt16BE(2)).toBe(200);
      v33.close();
    });

    it("refuses a viewer that asks for VNC Authentication, and reaches no viewer with a wrong password", async () => {
      const asking = await Viewer.connect(gatewayPort);
      await asking.read(12);
      asking.send("RFB 003.008\n");
      await asking.read(2);
      asking.send([2]);
      expect((await asking.read(4)).readUInt32BE(0)).toBe(1);
      expect((await asking.read((await asking.read(4)).readUInt32BE(0))).toString()).toMatch(/None/);
      await asking.closed;

      targetPassword = Buffer.from("wrong!!!");
      try {
        const refused = await Viewer.connect(gatewayPort);
        await refused.closed;
        expect(refused.received).toHaveLength(0);
        expect(failures.at(-1)).toMatch(/refused the gateway's password/);
      } finally {
        targetPassword = password;
      }
    });
  });
}

class Viewer {
  private buffered = Buffer.alloc(0);
  readonly closed: Promise<void>;
  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
    });
    this.closed = new Promise((resolve) => socket.on("close", () => resolve()));
    socket.on("error", () => {});
  }

  static connect(port: number): Promise<Viewer> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ port, host: "127.0.0.1" });
      socket.once("connect", () => resolve(new Viewer(socket)));
      socket.once("error", reject);
    });
  }

  get received(): Buffer {
    return this.buffered;
  }

  async read(n: number): Promise<Buffer> {
    await until(() => this.buffered.length >= n || this.socket.destroyed, 10_000);
    if (this.buffered.length < n) throw new Error(`closed with ${this.buffered.length} of ${n} bytes`);
    const out = this.buffered.subarray(0, n);
    this.buffered = this.buffered.subarray(n);
    return out;
  }

  send(bytes: string | number[]): void {
    this.socket.write(typeof bytes === "string" ? bytes : Buffer.from(bytes));
  }

  close(): void {
    this.socket.destroy();
  }
}

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
