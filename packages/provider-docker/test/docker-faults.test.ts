import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import { failureOf, temporaryDataDir } from "@agent-computer/testing/provider-test";
import Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { COMPUTER_LABELS, dockerProvider } from "../src/index.js";
import { dockerTestEnvironment } from "./docker-test-environment.js";
import { EngineSocketProxy } from "./engine-socket-proxy.js";

const env = await dockerTestEnvironment("docker provider faults");
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir });
  const owned: Machine[] = [];
  const provision = async (homeKey: string, labels: Record<string, string> = {}) => {
    const m = await provider.provision({ computerId: `faults-${homeKey}`, homeKey, labels });
    owned.push(m);
    return m;
  };
  afterAll(async () => {
    for (const m of owned) await m.destroy().catch(() => {});
  });

  describe("docker provider faults", () => {
    it("a container killed from outside mid-exec gives a retryable typed error, and reconnect says gone", async () => {
      const m = await provision(`killed-${Date.now()}`);
      const running = m.exec({ shell: "sleep 30" });
      await new Promise((r) => setTimeout(r, 500));
      const id = m.ref.slice("docker:".length);
      expect(spawnSync("docker", ["rm", "-f", id]).status).toBe(0);
      const error = await failureOf(running);
      expect(error.retryable).toBe(true);
      expect(error.code).toBe("UNAVAILABLE");
      expect(await provider.reconnect(m.ref)).toBe("gone");
      // Later calls on the stale handle say the machine is gone, not "try again".
      expect((await failureOf(m.exec({ argv: ["true"] }))).code).toBe("PROVIDER_GONE");
    });

    it("a cut engine connection gives UNAVAILABLE and leaves the home intact", async () => {
      const proxy = new EngineSocketProxy(join(dataDir, "engine-proxy.sock"));
      await proxy.listen();
      const proxied = dockerProvider({ docker: new Docker({ socketPath: proxy.path }), image: env.image, dataDir });
      const homeKey = `cut-${Date.now()}`;
      // Cleaned up through the direct provider below: the cut proxy cannot reach the engine.
      const m = await proxied.provision({ computerId: "faults-cut", homeKey });
      await m.files.write("notes/kept.txt", new TextEncoder().encode("before the cut"));
      const running = m.exec({ shell: "sleep 20" });
      await new Promise((r) => setTimeout(r, 500));
      await proxy.cut();
      const during = await failureOf(running);
      expect(during.code).toBe("UNAVAILABLE");
      expect(during.retryable).toBe(true);
      const after = await failureOf(m.files.read("notes/kept.txt"));
      expect(after.code).toBe("UNAVAILABLE");
      // The home on the host and through a healthy connection is untouched.
      expect(await readFile(join(dataDir, "homes", homeKey, "notes/kept.txt"), "utf8")).toBe("before the cut");
      const again = await provider.reconnect(m.ref);
      expect(again).not.toBe("gone");
      owned.push(again as Machine);
      expect(text(await (again as Machine).files.read("notes/kept.txt"))).toBe("before the cut");
    });

    it("output still on its way when the command exits arrives whole: a file read is never cut", async () => {
      const proxy = new EngineSocketProxy(join(dataDir, "engine-slow.sock"));
      await proxy.listen();
      const slow = dockerProvider({ docker: new Docker({ socketPath: proxy.path }), image: env.image, dataDir });
      const m = await slow.provision({ computerId: "faults-slow", homeKey: `slow-${Date.now()}` });
      try {
        const bytes = randomBytes(300_000);
        await m.files.write("big.bin", bytes);
        // The engine's answers reach us 2.5 s late: cat has long exited when its
        // output arrives, and the exit poll (every second) sees it first.
        proxy.delayExecOutput(2500);
        const read = await m.files.read("big.bin");
        expect(read.length).toBe(bytes.length);
        expect(Buffer.from(read).equals(bytes)).toBe(true);
        // A child that keeps the output open still does not hold the call.
        proxy.delayExecOutput(0);
        const started = performance.now();
        const detached = await m.exec({ shell: "sleep 30 & echo started" });
        expect(text(detached.stdout)).toBe("started\n");
        expect(performance.now() - started).toBeLessThan(10_000);
      } finally {
        // Destroyed through the proxy while it still forwards: a cut proxy would leave the computer behind.
        proxy.delayExecOutput(0);
        await m.destroy().catch(() => {});
        await proxy.cut();
      }
    });

    it("a home with hostile names round-trips through export and import", async () => {
      const names = [
        "with space.txt",
        "new\nline.txt",
        "-leading-dash",
        "--double-dash",
        "ünïcödé 文件.txt",
        "Case.txt",
        "case.txt",
        "tab\there",
        "*glob?[x]",
        "$(echo pwned)",
        "trailing newline\n",
        ".hidden",
      ];
      const source = await provision(`hostile-src-${Date.now()}`);
      for (const [i, name] of names.entries()) {
        await source.files.write(`odd/${name}`, new TextEncoder().encode(`content ${i} of ${name}`));
      }
      await source.files.write("odd/-dash dir/\nnested\n/leaf", new TextEncoder().encode("leaf"));
      const listed = (await source.files.list("odd")).map((e) => e.name);
      expect([...listed].sort()).toEqual([...names, "-dash dir"].sort());

      let target = await provision(`hostile-dst-${Date.now()}`);
      await target.stop();
      await target.files.importWorkspace(await source.files.exportWorkspace());
      const resumed = await provider.reconnect(target.ref);
      expect(resumed).not.toBe("gone");
      target = resumed as Machine;
      for (const [i, name] of names.entries()) {
        expect(text(await target.files.read(`odd/${name}`))).toBe(`content ${i} of ${name}`);
      }
      expect(text(await target.files.read("odd/-dash dir/\nnested\n/leaf"))).toBe("leaf");
      // The imported files belong to the computer's user, so it can change them.
      const touched = await target.exec({ shell: 'printf more >> "odd/Case.txt" && id -u' });
      expect(text(touched.stdout).trim()).toBe("1000");
      expect(touched.exitCode).toBe(0);
    });

    it("maps a published port to a loopback URL and refuses an unpublished one", async () => {
      const withPorts = env.provider({ dataDir, ports: [8080] });
      const m = await withPorts.provision({ computerId: "faults-port", homeKey: `port-${Date.now()}` });
      owned.push(m);
      await m.files.write("site/index.html", new TextEncoder().encode("hello from the computer"));
      await m.exec({
        shell: "cd site && nohup python3 -m http.server 8080 </dev/null >/dev/null 2>&1 &",
        timeoutMs: 10_000,
      });
      const url = await m.portUrl?.(8080, { private: true });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      let body = "";
      for (let i = 0; i < 50 && body === ""; i++) {
        body = await fetch(`${url}/index.html`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.text(),
          () => new Promise<string>((r) => setTimeout(() => r(""), 100)),
        );
      }
      expect(body).toBe("hello from the computer");
      expect((await failureOf(m.portUrl?.(9999, { private: true }) ?? Promise.resolve())).code).toBe("UNSUPPORTED");
    });

    it("gives every computer limits and only CAP_SYS_CHROOT by default; Chromium keeps its sandbox", async () => {
      const m = await provision(`hardened-${Date.now()}`);
      const info = await env.docker.getContainer(m.ref.slice("docker:".length)).inspect();
      expect(info.HostConfig.CapDrop).toEqual(["ALL"]);
      expect(info.HostConfig.CapAdd).toEqual(["SYS_CHROOT"]);
      expect(info.HostConfig.Memory).toBe(6144 * 1024 * 1024);
      expect(info.HostConfig.NanoCpus).toBe(2_000_000_000);
      expect(info.HostConfig.PidsLimit).toBe(4096);
      expect(info.HostConfig.SecurityOpt).toContain("no-new-privileges:true");
      const caps = text((await m.exec({ shell: "grep -E '^Cap(Eff|Bnd)' /proc/self/status" })).stdout);
      expect(caps).toMatch(/CapEff:\s+0{16}/);
      expect(caps).toMatch(/CapBnd:\s+0{11}40000/);
      // Chromium's sandbox needs user namespaces, so the profile allows them;
      // "root" in one the bot makes owns nothing of the computer's.
      const inNamespace = await m.exec({ shell: "unshare -Ur sh -c 'id -u; echo x >> /etc/passwd'" });
      expect(text(inNamespace.stdout).trim()).toBe("0");
      expect(inNamespace.exitCode).not.toBe(0);
      expect(text(inNamespace.stderr)).toMatch(/Permission denied/);
      const chromium = await m.exec({
        shell:
          'chromium --headless --disable-gpu --no-first-run --user-data-dir="$(mktemp -d)" --dump-dom "data:text/html,<p>sandboxed</p>" 2>&1',
        timeoutMs: 60_000,
      });
      expect(text(chromium.stdout)).toContain("<p>sandboxed</p>");
      expect(text(chromium.stdout)).not.toMatch(/No usable sandbox/);
    }, 120_000);

    it("creates an unprivileged uid 1000 container off the host network, labelled, with the asked limits", async () => {
      const homeKey = `shape-${Date.now()}`;
      const m = await provider.provision({
        computerId: "faults-shape",
        homeKey,
        resources: { cpus: 0.5, memoryMb: 512 },
        labels: { team: "qa" },
      });
      owned.push(m);
      const info = await env.docker.getContainer(m.ref.slice("docker:".length)).inspect();
      expect(info.HostConfig.Privileged).toBe(false);
      expect(info.HostConfig.NetworkMode).not.toBe("host");
      expect(info.Config.User).toBe("1000:1000");
      expect(info.HostConfig.Memory).toBe(512 * 1024 * 1024);
      expect(info.HostConfig.NanoCpus).toBe(500_000_000);
      expect(info.HostConfig.ShmSize).toBe(1024 ** 3);
      expect(info.Config.Labels).toMatchObject({
        team: "qa",
        [COMPUTER_LABELS.computerId]: "faults-shape",
        [COMPUTER_LABELS.homeKey]: homeKey,
      });
      expect(info.Mounts).toEqual([
        expect.objectContaining({
          Type: "bind",
          Source: join(dataDir, "homes", homeKey),
          Destination: m.workspacePath,
        }),
      ]);
      expect(() => dockerProvider({ dataDir, network: "host" })).toThrow(/network/);
    });
  });
}
