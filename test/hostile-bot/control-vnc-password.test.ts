import { spawnSync } from "node:child_process";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { checkDockerHost, DISPLAY_LABELS, dockerProvider } from "@agent-computer/provider-docker";
import {
  chooseTestProvider,
  expectRfbScreen,
  RfbTestClient,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Issue 45, finding 2 (the control x11vnc's half): a client that reaches the
// control x11vnc's loopback port completed the RFB handshake without a
// password and moved the pointer during a person's control. The gateway now
// gives each x11vnc a password it alone holds (docs/architecture.md §4,
// "Whose input a display takes", item 2). Probed during a person's control
// as a bot would: a raw TCP client of uid 1000 on the computer's loopback and
// a websocket from a page of its browser, where the display shares the
// bot's container (displayContainer: false), and a raw client on the
// display container's loopback (the default), which a page of the bot's
// browser reached in finding 2. The person's screen through the gateway
// still works as before.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: control x11vnc password",
);

/** The first display and the first x11vnc port (desktop-state.ts, gateway-files.ts): slot n's control server is at +2n+1. */
const FIRST_DISPLAY = 100;
const FIRST_VNC_PORT = 5700;

/**
 * A raw RFB client: which security types RFB 3.8 offers, whether it gets
 * through (None when offered, else VNC Authentication with a guessed
 * password), pointer events to (5, 5) for a second when it does, and the
 * type RFB 3.3 (where the server picks) is given. One JSON line.
 */
const PROBE = `
import json, socket, struct, sys, time
port = int(sys.argv[1])
def recv(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise EOFError("closed after %d bytes" % len(b))
        b += c
    return b
out = {}
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    recv(s, 12); s.sendall(b"RFB 003.008\\n")
    types = list(recv(s, recv(s, 1)[0])); out["types"] = types
    if 1 in types:
        s.sendall(b"\\x01")
    else:
        s.sendall(b"\\x02"); recv(s, 16); s.sendall(bytes(16))
    out["authenticated"] = struct.unpack(">I", recv(s, 4))[0] == 0
    if out["authenticated"]:
        s.sendall(b"\\x01"); init = recv(s, 24); recv(s, struct.unpack(">I", init[20:24])[0])
        for _ in range(20):
            s.sendall(struct.pack(">BBHH", 5, 0, 5, 5)); time.sleep(0.05)
        out["input"] = "sent"
    s.close()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    recv(s, 12); s.sendall(b"RFB 003.003\\n")
    out["type33"] = struct.unpack(">I", recv(s, 4))[0]
    s.close()
except Exception as e:
    out["error"] = str(e)
print(json.dumps(out))
`;

/**
 * The same in a page of the bot's browser, over a websocket (x11vnc answers
 * websockets on its RFB port): the security types RFB 3.8 offers, whether
 * it gets through, pointer events to (5, 5) for a second when it does.
 */
const pageProbe = (port: number) => `new Promise((resolve) => {
  const out = {};
  const ws = new WebSocket("ws://127.0.0.1:${port}/", ["binary"]);
  ws.binaryType = "arraybuffer";
  const send = (bytes) => ws.send(new Uint8Array(bytes));
  let buf = new Uint8Array(0);
  let step = "version";
  ws.onmessage = (event) => {
    const more = new Uint8Array(event.data);
    const joined = new Uint8Array(buf.length + more.length);
    joined.set(buf);
    joined.set(more, buf.length);
    buf = joined;
    for (;;) {
      if (step === "version" && buf.length >= 12) {
        buf = buf.slice(12);
        ws.send(new TextEncoder().encode("RFB 003.008\\n"));
        step = "types";
      } else if (step === "types" && buf.length >= 1 && buf.length >= 1 + buf[0]) {
        out.types = [...buf.slice(1, 1 + buf[0])];
        buf = buf.slice(1 + buf[0]);
        send([out.types.includes(1) ? 1 : 2]);
        step = out.types.includes(1) ? "result" : "challenge";
      } else if (step === "challenge" && buf.length >= 16) {
        buf = buf.slice(16);
        send(new Array(16).fill(0));
        step = "result";
      } else if (step === "result" && buf.length >= 4) {
        out.authenticated = buf[0] === 0 && buf[1] === 0 && buf[2] === 0 && buf[3] === 0;
        step = "done";
        if (!out.authenticated) return resolve(out);
        send([1]);
        for (let i = 0; i < 20; i++) setTimeout(() => send([5, 0, 0, 5, 0, 5]), i * 50);
        setTimeout(() => resolve({ ...out, input: "sent" }), 1100);
      } else return;
    }
  };
  ws.onerror = () => resolve({ ...out, error: "websocket error" });
  setTimeout(() => resolve({ ...out, error: "timeout" }), 8000);
})`;

if (!env.missing) {
  describe("hostile bot: control x11vnc password", () => {
    const machines: Machine[] = [];
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    afterAll(async () => {
      for (const m of machines) await m.destroy().catch(() => {});
    });

    /** The container a bot's program runs in: the computer's own, or (display apart) the display's, named by its label. */
    const containerOf = (machine: Machine, displayContainer: boolean): string => {
      const id = machine.ref.slice("docker:".length);
      if (!displayContainer) return id;
      const label = spawnSync(
        "docker",
        ["inspect", "-f", `{{index .Config.Labels "${DISPLAY_LABELS.displayContainer}"}}`, id],
        { encoding: "utf8" },
      );
      expect(label.status).toBe(0);
      return label.stdout.trim();
    };

    /**
     * A person takes control and puts the pointer at (400, 300); a program
     * of uid 1000 in `container` probes the control x11vnc; where the
     * pointer is after, and whether the person's screen still answers.
     */
    const probeDuringTakeover = async (displayContainer: boolean) => {
      const provider = env.provider({ dataDir: await temporaryDataDir(), displayContainer });
      const machine = await provider.provision({
        computerId: `vnc-password-${displayContainer ? "apart" : "shared"}`,
        homeKey: `vnc-password-${displayContainer}-${Date.now()}`,
      });
      machines.push(machine);
      const desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
      const port = FIRST_VNC_PORT + 2 * (Number(desktop.display.slice(1)) - FIRST_DISPLAY) + 1;
      const control = await RfbTestClient.open(await desktop.screenEndpoint("control"));
      try {
        const init = await control.handshake();
        expect(init.banner).toBe("RFB 003.008\n");
        control.pointer(400, 300);
        await expect
          .poll(async () => (await desktop.observe(undefined, { includeImage: false })).cursor)
          .toEqual({ x: 400, y: 300 });
        const run = spawnSync(
          "docker",
          ["exec", "-u", "1000", containerOf(machine, displayContainer), "python3", "-c", PROBE, String(port)],
          { encoding: "utf8", timeout: 30_000 },
        );
        expect(run.stderr).toBe("");
        const probe = JSON.parse(run.stdout) as Record<string, unknown>;
        // On a shared display the bot's browser is beside x11vnc; apart, its pages reach the bot's loopback instead.
        const page = displayContainer ? undefined : await desktop.evaluateInPage(pageProbe(port));
        // Had the probe's pointer events gone through, they would have landed by now (it sends them for 1 s, then exits).
        await sleep(500);
        const cursor = (await desktop.observe(undefined, { includeImage: false })).cursor;
        // The person's open connection and a new one through the gateway still work.
        expect(await control.requestUpdate()).toBe(0);
        await expectRfbScreen(await desktop.screenEndpoint("control"), { width: init.width, height: init.height });
        return { probe, page, cursor };
      } finally {
        control.close();
      }
    };

    it("offers a bot's process and a page of its browser, on a display they share, only VNC Authentication, and their guesses move nothing (displayContainer: false)", async () => {
      const { probe, page, cursor } = await probeDuringTakeover(false);
      expect(probe).toEqual({ types: [2], authenticated: false, type33: 2 });
      expect(page).toEqual({ types: [2], authenticated: false });
      expect(cursor).toEqual({ x: 400, y: 300 });
    }, 180_000);

    it("offers a client on the display container's loopback only VNC Authentication too (the default)", async () => {
      const { probe, cursor } = await probeDuringTakeover(true);
      expect(probe).toEqual({ types: [2], authenticated: false, type33: 2 });
      expect(cursor).toEqual({ x: 400, y: 300 });
    }, 180_000);
  });
}
