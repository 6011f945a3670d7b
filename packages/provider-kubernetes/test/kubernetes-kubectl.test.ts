import { spawnSync } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Machine } from "@agent-computer/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KubernetesMachine, kubernetesProvider } from "../src/index.js";
import { KUBECTL, type KubectlFixture, runProgram, startKubectlFixture } from "./kubectl-access.js";
import { kubectlExportHome, kubectlImportHome } from "./kubectl-tar.js";
import { kubernetesTestEnvironment, TEST_NAMESPACE } from "./kubernetes-test-environment.js";
import { KubernetesWireFixture } from "./kubernetes-wire-fixture.js";

// An outside client no one here wrote: kubectl (Debian's kubernetes-client,
// or the one named by KUBECTL) lists the computer pods of the wire fixture
// with their labels, so the fixture speaks the API as kubectl reads it and
// the labels are what an operator sees.
const env = await kubernetesTestEnvironment("kubernetes kubectl");

const found = spawnSync(KUBECTL, ["version", "--client"], { encoding: "utf8" });
const kubectlMissing = found.status !== 0 ? `${KUBECTL} is not runnable (${found.error?.message ?? found.stderr})` : "";

if (!env.missing) {
  // Under CI a missing kubectl fails (.ci/kubectl-setup.sh provides one); elsewhere the suite says why it skips.
  if (kubectlMissing && process.env.CI) {
    it("needs kubectl (.ci/kubectl-setup.sh)", () => {
      throw new Error(kubectlMissing);
    });
  }
  describe.skipIf(kubectlMissing !== "")(`kubernetes kubectl ${kubectlMissing}`, () => {
    const owned: Machine[] = [];
    let dir: string;
    let fixture: KubernetesWireFixture | undefined;
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
      await fixture?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    let access: KubectlFixture<KubernetesWireFixture>;
    let m: KubernetesMachine;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "agent-computer-kubectl-"));
      // kubectl sends a bearer token only over TLS: a fixture of its own on HTTPS, with a kubeconfig written by hand.
      access = await startKubectlFixture(TEST_NAMESPACE, dir, async (tls) => {
        const started = new KubernetesWireFixture(env.docker, [TEST_NAMESPACE], tls);
        await started.start();
        return started;
      });
      fixture = access.fixture;
      const provider = kubernetesProvider(
        { kubeConfig: fixture.kubeConfig(), namespace: TEST_NAMESPACE, image: env.image },
        {},
      );
      m = (await provider.provision({
        computerId: "kubectl-computer",
        homeKey: `kubectl-${Date.now()}`,
        labels: { "agent-computer.org/bot-id": "bot-kubectl" },
      })) as KubernetesMachine;
      owned.push(m);
    }, 90_000);

    it("kubectl get pods lists the computer pods with their labels", async () => {
      const name = m.ref.split("/")[1] as string;
      const kubectl = (...args: string[]) => runProgram(KUBECTL, [...access.kubectlArgs, ...args]);
      const listed = await kubectl("get", "pods", "-l", "app.kubernetes.io/name=agent-computer", "--show-labels");
      expect(listed.stderr).toBe("");
      expect(listed.status).toBe(0);
      const line = listed.stdout.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
      // The fixture answers with a PodList, not a server-side Table, so kubectl prints NAME, AGE and LABELS.
      expect(listed.stdout.split("\n")[0]).toMatch(/^NAME\s+.*LABELS$/);
      expect(line, listed.stdout).not.toBe("");
      for (const label of [
        "app.kubernetes.io/name=agent-computer",
        "agent-computer.org/managed=true",
        "agent-computer.org/computer-id=kubectl-computer",
        "agent-computer.org/bot-id=bot-kubectl",
      ])
        expect(line).toContain(label);
      const json = await kubectl("get", "pod", name, "-o", "json");
      expect(json.status, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout).metadata.labels["agent-computer.org/bot-id"]).toBe("bot-kubectl");
      console.log(`kubectl ${found.stdout.trim().split("\n")[0]}:\n${listed.stdout}`);
    }, 90_000);

    it("the bench's kubectl baseline moves a home through the fixture and fails loudly when it cannot", async () => {
      const target = { kubectlArgs: access.kubectlArgs, pod: m.podName, container: "computer" };
      const made = await m.exec({ argv: ["sh", "-c", "mkdir -p d && head -c 100000 /dev/urandom > d/f"] });
      expect(made.exitCode).toBe(0);
      expect(await kubectlExportHome(target, m.workspacePath)).toBeGreaterThan(100_000);
      await expect(kubectlExportHome(target, "/no/such/home")).rejects.toThrow(/kubectl baseline failed/);
      const tarFile = join(dir, "home.tar");
      await pipeline(await m.files.exportWorkspace(), createWriteStream(tarFile));
      const into = `${m.workspacePath}-kubectl`;
      await kubectlImportHome(target, into, tarFile, 100_000)();
      const landed = await m.exec({ argv: ["cmp", "d/f", `${into}/d/f`] });
      expect(landed.exitCode).toBe(0);
      await expect(kubectlImportHome(target, into, tarFile, 100_001)()).rejects.toThrow(/holds 100000 of 100001 bytes/);
      await expect(kubectlImportHome({ ...target, pod: "no-such-pod" }, into, tarFile, 100_000)()).rejects.toThrow(
        /kubectl baseline failed/,
      );
    }, 90_000);
  });
}
