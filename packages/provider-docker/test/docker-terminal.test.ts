import { PassThrough } from "node:stream";
import type { Machine, TerminalEndpoint } from "@agent-computer/core";
import { COMPUTER_SHM_BYTES, computerSeccompProfile, type LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { refusalOf, TerminalTestClient, temporaryDataDir } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The browser terminal on a real container of the real image: a shell per
// websocket, as the computer's user, living exactly as long as the control
// capability it was granted under.
const STATE = "/tmp/agent-computer-desktops";
const env = await dockerTestEnvironment("docker terminal");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  // The shared display (displayContainer: false): this file tests what holds when the display stack
  // runs in the computer's own container; docker-display-container.test.ts covers the default.
  const provider = env.provider({ dataDir, displayContainer: false });
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const clients: TerminalTestClient[] = [];
  const open = async (endpoint: Pick<TerminalEndpoint, "url" | "token">) => {
    const client = await TerminalTestClient.open(endpoint);
    clients.push(client);
    return client;
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const sh = async (script: string) =>
    Buffer.from((await machine.exec({ argv: ["sh", "-c", script] })).stdout)
      .toString()
      .trim();
  /** PTY servers running, and session folders present, in the computer. */
  const ptyServers = () => sh("pgrep -f terminal-pty-serve[r] | wc -l");
  const sessionFolders = () => sh(`ls -A ${STATE}/gateway/terminals | wc -l`);
  const until = async (check: () => Promise<boolean>, ms: number) => {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) return false;
      await sleep(100);
    }
    return true;
  };

  describe("docker terminal", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "terminals", homeKey: `terminals-${Date.now()}` });
      desktop = (await machine.openDesktop?.("shell-bot")) as LinuxDesktopSession;
      await machine.exec({ argv: ["mkdir", "-p", "bots/shell-bot"] });
    }, 120_000);
    afterAll(async () => {
      for (const client of clients) client.close();
      await desktop?.release().catch(() => {});
      await machine?.destroy();
    });

    it("gives each connection its own login shell as the computer's user, in the bot's folder, on its display", async () => {
      const control = await desktop.screenEndpoint("control");
      const terminal = await desktop.terminalEndpoint(undefined, { controlId: control.id });
      expect(new URL(terminal.url).pathname).toBe(`/terminals/${terminal.id}`);
      expect(terminal.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/terminals\//);
      expect(terminal.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(terminal.expiresAt).toBeLessThanOrEqual(control.expiresAt);
      const first = await open(terminal);
      first.type("whoami; echo $HOME\n");
      await first.waitFor(/\ncomputer\n\/home\/computer\n/);
      expect((await first.run("pwd", /\n(\/\S+)\n/))[1]).toBe("/home/computer/bots/shell-bot");
      const [, display, term, user, logname] = await first.run(
        'printf "%s|%s|%s|%s|%s\\n" "E$((6*7))" "$DISPLAY" "$TERM" "$USER" "$LOGNAME"',
        /E42\|([^|]*)\|([^|]*)\|([^|]*)\|([^|\n]*)\n/,
      );
      expect({ display, term, user, logname }).toEqual({
        display: desktop.display,
        term: "xterm-256color",
        user: "computer",
        logname: "computer",
      });
      expect((await first.run("id -u; shopt -q login_shell && echo login", /\n(\d+)\nlogin\n/))[1]).toBe("1000");
      // A second tab under the same control capability: its own shell, at the same time.
      const second = await open(terminal);
      const [a, b] = await Promise.all([first.run("echo pid=$$", /pid=(\d+)/), second.run("echo pid=$$", /pid=(\d+)/)]);
      expect(a[1]).not.toBe(b[1]);
      expect(await ptyServers()).toBe("1");
      second.resize(132, 43);
      expect((await second.run("stty size", /\n(\d+ \d+)\n/))[1]).toBe("43 132");
      expect((await first.run("stty size", /\n(\d+ \d+)\n/))[1]).toBe("24 80");

      // Revoking the control capability ends both shells, the server and its session files.
      // The revoke command starts the CLI in the computer (~0.5 s, more on a loaded machine): the gateway's
      // own promptness is measured from when that command has answered.
      await desktop.revokeEndpoint(control.id);
      const answeredAt = Date.now();
      const [closedA, closedB] = await Promise.all([first.closed, second.closed]);
      expect(closedA.at - answeredAt).toBeLessThan(1000);
      expect(closedB.at - answeredAt).toBeLessThan(1000);
      expect(closedA.code).toBe(1008);
      expect(await until(async () => (await ptyServers()) === "0", 2000)).toBe(true);
      expect(await sessionFolders()).toBe("0");
      expect(await sh(`ps -o pid= -p ${a[1]},${b[1]} || true`)).toBe("");
      expect((await refusalOf(terminal.url, { token: terminal.token })).status).toBe(410);
    }, 90_000);

    it("refuses a view capability, an ended one and an unknown id as --control-id", async () => {
      const view = await desktop.screenEndpoint("view");
      await expect(desktop.terminalEndpoint(undefined, { controlId: view.id })).rejects.toMatchObject({
        code: "FENCED_OUT",
      });
      const control = await desktop.screenEndpoint("control");
      await desktop.revokeEndpoint(control.id);
      await expect(desktop.terminalEndpoint(undefined, { controlId: control.id })).rejects.toMatchObject({
        code: "FENCED_OUT",
      });
      await expect(desktop.terminalEndpoint(undefined, { controlId: "AAAAAAAAAAAAAAAAAAAAAA" })).rejects.toMatchObject({
        code: "NOT_FOUND",
      });
      await expect(desktop.terminalEndpoint(undefined, { controlId: "not an id" })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      // A terminal is no control capability either, and its token opens no screen.
      const live = await desktop.screenEndpoint("control");
      const terminal = await desktop.terminalEndpoint(undefined, { controlId: live.id });
      await expect(desktop.terminalEndpoint(undefined, { controlId: terminal.id })).rejects.toMatchObject({
        code: "FENCED_OUT",
      });
      expect((await refusalOf(terminal.url, { token: terminal.token, path: `/screens/${terminal.id}` })).status).toBe(
        404,
      );
      expect((await refusalOf(terminal.url)).status).toBe(401);
      await desktop.revokeEndpoint(live.id);
    }, 60_000);

    it("ends the terminal when its control capability expires", async () => {
      const control = await desktop.screenEndpoint("control", undefined, { ttlMs: 3000 });
      const terminal = await desktop.terminalEndpoint(undefined, { controlId: control.id });
      expect(terminal.expiresAt).toBe(control.expiresAt);
      const client = await open(terminal);
      await client.run("echo ready", /\nready\n/);
      const closed = await client.closed;
      expect(closed.at).toBeGreaterThanOrEqual(control.expiresAt);
      expect(closed.at - control.expiresAt).toBeLessThan(2500);
      expect(await until(async () => (await ptyServers()) === "0", 3000)).toBe(true);
      expect(await sessionFolders()).toBe("0");
    }, 60_000);

    it("closes a revoked terminal's connections; without a control id it owns its own control capability", async () => {
      const terminal = await desktop.terminalEndpoint();
      const client = await open(terminal);
      await client.run("echo ready", /\nready\n/);
      const log = await sh(`grep "cap=${terminal.id} kind=terminals" ${STATE}/gateway/gateway.log`);
      const controlId = /control=([A-Za-z0-9_-]{22})/.exec(log)?.[1];
      expect(controlId).toBeDefined();
      // The revoke command starts the CLI in the computer (~0.5 s, more on a loaded machine): the gateway's
      // own promptness is measured from when that command has answered.
      await desktop.revokeEndpoint(terminal.id);
      const answeredAt = Date.now();
      const closed = await client.closed;
      expect(closed.at - answeredAt).toBeLessThan(1000);
      expect(
        await sh(`grep -c "end cap=${controlId} kind=screens mode=control.*why=revoked" ${STATE}/gateway/gateway.log`),
      ).toBe("1");
      expect(await until(async () => (await ptyServers()) === "0", 2000)).toBe(true);
      await desktop.revokeEndpoint(terminal.id); // idempotent
    }, 60_000);

    it("closes only the connection that sends a bad control message or an oversized frame; an exited shell closes its own", async () => {
      const terminal = await desktop.terminalEndpoint();
      const [bad, big, good] = [await open(terminal), await open(terminal), await open(terminal)];
      await Promise.all([bad, big, good].map((c) => c.run("echo ready", /\nready\n/)));
      bad.ws.send("not json");
      expect((await bad.closed).code).toBe(1007);
      big.ws.send(Buffer.alloc(300 * 1024, 0x61));
      expect((await big.closed).code).toBe(1009);
      expect((await good.run("echo still", /\nstill\n/))[0]).toBeDefined();
      good.type("exit\n");
      expect((await good.closed).code).toBe(1000);
      await desktop.revokeEndpoint(terminal.id);
    }, 60_000);

    it("hangs up the terminals of a desktop that is released", async () => {
      const other = (await machine.openDesktop?.("shell-bot-2")) as LinuxDesktopSession;
      const client = await open(await other.terminalEndpoint());
      await client.run("echo ready", /\nready\n/);
      const pid = (await client.run("echo pid=$$", /pid=(\d+)/))[1];
      await other.release();
      const closed = await Promise.race([client.closed, sleep(500).then(() => undefined)]);
      expect(closed?.code).toBe(1001);
      expect(await ptyServers()).toBe("0");
      expect(await sh(`ps -o pid= -p ${pid} || true`)).toBe("");
    }, 120_000);

    it("names a uid without a passwd entry in its own terminal (nss_wrapper), leaving /etc/passwd alone", async () => {
      const computer = await startAsUid(env.docker, env.image, "4242:4242");
      try {
        const passwdBefore = await computer.exec(["sha256sum", "/etc/passwd"]);
        expect(await computer.exec(["sh", "-c", "whoami 2>&1 || true"])).toMatch(/cannot find name for user ID 4242/);
        await computer.desktop(["start", "--bot", "nss-bot"]);
        const control = await computer.desktop(["screen", "grant", "--bot", "nss-bot", "--mode", "control"]);
        const terminal = await computer.desktop([
          "terminal",
          "grant",
          "--bot",
          "nss-bot",
          "--control-id",
          control.id as string,
        ]);
        const client = await open({
          url: `ws://127.0.0.1:${computer.gatewayPort}${terminal.path}`,
          token: terminal.token as string,
        });
        const [, name, uid, home] = await client.run(
          'printf "%s|%s|%s|%s\\n" "W$((6*7))" "$(whoami)" "$(id -u)" "$HOME"',
          /W42\|([^|]*)\|([^|]*)\|([^|\n]*)\n/,
        );
        expect({ name, uid, home }).toEqual({ name: "computer", uid: "4242", home: "/tmp/nss-home" });
        expect(await computer.exec(["sha256sum", "/etc/passwd"])).toBe(passwdBefore);
        expect(await computer.exec(["sh", "-c", "grep -c 4242 /etc/passwd || true"])).toBe("0");
        client.close();
      } finally {
        await computer.remove();
      }
    }, 120_000);
  });
}

/** A bare computer container run as `user` (a uid with no passwd entry), its gateway port published. */
async function startAsUid(docker: Docker, image: string, user: string) {
  const container = await docker.createContainer({
    Image: image,
    Cmd: ["sleep", "infinity"],
    User: user,
    WorkingDir: "/tmp",
    Env: ["HOME=/tmp/nss-home", "LANG=C.UTF-8"],
    ExposedPorts: { "6080/tcp": {} },
    HostConfig: {
      Init: true,
      ShmSize: COMPUTER_SHM_BYTES,
      SecurityOpt: [`seccomp=${computerSeccompProfile()}`, "no-new-privileges:true"],
      PortBindings: { "6080/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }] },
    },
  });
  await container.start();
  const info = await container.inspect();
  const gatewayPort = Number(info.NetworkSettings.Ports["6080/tcp"]?.[0]?.HostPort);
  const exec = async (argv: string[]): Promise<string> => {
    const run = await container.exec({ Cmd: argv, AttachStdout: true, AttachStderr: true });
    const stream = await run.start({});
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on("data", (chunk: Buffer) => chunks.push(chunk));
    docker.modem.demuxStream(stream, out, new PassThrough());
    await new Promise((resolve) => stream.on("end", resolve));
    return Buffer.concat(chunks).toString().trim();
  };
  await exec(["mkdir", "-p", "/tmp/nss-home"]);
  return {
    gatewayPort,
    exec,
    /** Runs the desktop command with the home above; its last JSON line, which must be ok. */
    async desktop(args: string[]): Promise<Record<string, unknown>> {
      const out = await exec(["desktop", ...args, "--home", "/tmp/nss-home"]);
      const last = JSON.parse(out.split("\n").at(-1) ?? "{}") as Record<string, unknown>;
      if (last.ok !== true) throw new Error(`desktop ${args[0]} failed: ${out.slice(-500)}`);
      return last;
    },
    remove: () => container.remove({ force: true }),
  };
}
