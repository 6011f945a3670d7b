import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { COMPUTER_SHM_BYTES, computerImageDir } from "../src/index.js";

// The real image on the real engine: Chromium starts as uid 1000 with its own
// sandbox under the shipped seccomp profile and answers CDP on loopback. The
// docker CLI starts it, not a provider: what is tested is the image itself.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "computer image",
);
const { image } = env;

const started: string[] = [];
afterAll(() => {
  for (const id of started) spawnSync("docker", ["rm", "-f", id]);
});

/** Starts the image as uid 1000 (its USER) with a seccomp profile file, or the engine's default; returns the container id. */
function startComputer(seccomp: string | undefined): string {
  const run = spawnSync(
    "docker",
    [
      "run",
      "-d",
      "--init",
      "--network",
      "none",
      "--shm-size",
      String(COMPUTER_SHM_BYTES),
      ...(seccomp ? ["--security-opt", `seccomp=${seccomp}`] : []),
      "--security-opt",
      "no-new-privileges:true",
      image,
    ],
    { encoding: "utf8" },
  );
  expect(run.status, run.stderr).toBe(0);
  const id = run.stdout.trim();
  started.push(id);
  return id;
}

/** Starts Xvfb and Chromium in the computer, then polls CDP on the computer's loopback. */
function startChromium(id: string): { version: string; log: string; uid: string; sandboxed: boolean } {
  const script = `Xvfb :100 -screen 0 1280x800x24 >/tmp/xvfb.log 2>&1 &
sleep 0.5
DISPLAY=:100 nohup agent-computer-chromium "$HOME/.browser-profiles/image-test" about:blank >/tmp/chromium.log 2>&1 &
for i in $(seq 1 75); do
  v=$(curl -s http://127.0.0.1:9222/json/version) && [ -n "$v" ] && break
  # Chromium gave up (no usable sandbox): stop waiting.
  [ "$i" -gt 5 ] && ! pgrep -f /usr/lib/chromium/chromium >/dev/null && break
  sleep 0.2
done
printf '%s\\n' "$v" > /tmp/cdp.json
id -u > /tmp/uid
# Renderers in a user namespace other than PID 1's mean the namespace sandbox is on. DevTools
# answers before about:blank's renderer starts: wait for one (a loaded machine took over a second).
for i in $(seq 1 50); do pgrep -f -- '--type=renderer' >/dev/null && break; sleep 0.2; done
sandboxed=no
for p in $(pgrep -f -- '--type=renderer'); do
  [ "$(readlink /proc/$p/ns/user)" != "$(readlink /proc/1/ns/user)" ] && sandboxed=yes
done
echo $sandboxed > /tmp/sandboxed`;
  spawnSync("docker", ["exec", id, "sh", "-c", script], { encoding: "utf8", timeout: 60_000 });
  const read = (file: string) => spawnSync("docker", ["exec", id, "cat", file], { encoding: "utf8" }).stdout.trim();
  return {
    version: read("/tmp/cdp.json"),
    log: read("/tmp/chromium.log"),
    uid: read("/tmp/uid"),
    sandboxed: read("/tmp/sandboxed") === "yes",
  };
}

if (!env.missing) {
  describe("computer image", () => {
    it("runs Chromium as uid 1000 with its sandbox under the shipped seccomp profile; CDP answers on loopback", () => {
      const id = startComputer(join(computerImageDir(), "seccomp", "chromium.json"));
      const chromium = startChromium(id);
      expect(chromium.uid).toBe("1000");
      expect(JSON.parse(chromium.version || "{}")).toMatchObject({ Browser: expect.stringMatching(/^Chrome\//) });
      expect(chromium.sandboxed).toBe(true);
      expect(chromium.log).not.toMatch(/No usable sandbox/);
    }, 90_000);

    it("needs the profile: under Docker's default profile Chromium finds no usable sandbox", () => {
      const id = startComputer(undefined);
      const chromium = startChromium(id);
      expect(chromium.version).toBe("");
      expect(chromium.log).toMatch(/No usable sandbox|Operation not permitted/);
    }, 90_000);

    it("keeps Chromium's shared memory out of a 64 MiB /dev/shm (a hosted runner's default), and in a large one", () => {
      // A stand-in chromium earlier on PATH prints the flags the wrapper passes.
      const flagsWith = (shm: string) => {
        const run = spawnSync(
          "docker",
          [
            "run",
            "--rm",
            "--network",
            "none",
            ...(shm ? ["--shm-size", shm] : []),
            "--entrypoint",
            "sh",
            image,
            "-c",
            "mkdir -p /tmp/bin && printf '#!/bin/sh\\necho \"$@\"\\n' > /tmp/bin/chromium && chmod +x /tmp/bin/chromium && PATH=/tmp/bin:$PATH agent-computer-chromium /tmp/profile",
          ],
          { encoding: "utf8" },
        );
        expect(run.status, run.stderr).toBe(0);
        return run.stdout;
      };
      expect(flagsWith("")).toContain("--disable-dev-shm-usage");
      const large = flagsWith(String(COMPUTER_SHM_BYTES));
      expect(large).toContain("--user-data-dir=/tmp/profile");
      expect(large).not.toContain("--disable-dev-shm-usage");
    }, 60_000);

    it("ships the tools docs/architecture.md §4 lists", () => {
      const id = startComputer(join(computerImageDir(), "seccomp", "chromium.json"));
      const tools = [
        "Xvfb",
        "openbox",
        "chromium",
        "x11vnc",
        "xdotool",
        "import",
        "python3",
        "node",
        "gh",
        "pdftotext",
        "pandoc",
        "websockify",
      ];
      const probe = spawnSync(
        "docker",
        [
          "exec",
          id,
          "sh",
          "-c",
          `for t in ${tools.join(" ")}; do command -v $t >/dev/null || echo missing:$t; done; python3 -c 'import openpyxl'`,
        ],
        { encoding: "utf8" },
      );
      expect(probe.stdout.trim()).toBe("");
      expect(probe.status).toBe(0);
    }, 60_000);
  });
}
