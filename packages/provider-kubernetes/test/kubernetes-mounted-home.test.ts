import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { failureOf } from "@agent-computer/testing/provider-test";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, describe, expect, it } from "vitest";
import { kubernetesProvider } from "../src/index.js";
import { kubernetesTestEnvironment, TEST_NAMESPACE } from "./kubernetes-test-environment.js";
import type { Json } from "./kubernetes-wire-fixture.js";

// The mounted home (the self-host document's KUBERNETES_SANDBOX_HOME_CLAIM):
// a claim backed by a host folder, pods bound to the node of the pods that
// hold it by a required affinity, the home never copied.
const env = await kubernetesTestEnvironment("kubernetes mounted home");
const CLAIM = "agent-computer-data";
const APP_NAMESPACE = "agent-computer-app";
const APP_LABELS = { app: "agent-computer-api" };
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

if (!env.missing) {
  const { fixture } = env;
  const claimDir = await mkdtemp(join(tmpdir(), "agent-computer-claim-"));
  fixture.addClaim(TEST_NAMESPACE, CLAIM, claimDir);
  // The API pod that holds the claim's volume: computer pods must run on its node.
  fixture.addForeignPod(APP_NAMESPACE, "agent-computer-api-0", APP_LABELS);
  const mounted = {
    homeClaim: CLAIM,
    homeColocateNamespace: APP_NAMESPACE,
    homeColocateLabels: APP_LABELS,
    homeClaimLocalPath: claimDir,
  };
  const owned: Machine[] = [];
  afterAll(async () => {
    for (const m of owned) await m.destroy().catch(() => {});
    await rm(claimDir, { recursive: true, force: true });
  });
  const podOf = (m: Machine) => fixture.podJson(TEST_NAMESPACE, m.ref.split("/")[1] as string) as Json;

  defineProviderConformance({
    name: "kubernetes with a mounted home",
    createProvider: () => env.provider({ ...mounted, seccompLocalhostProfile: "agent-computer/chromium.json" }),
    capabilities: { desktop: true, pageBrowser: true, terminal: true, stopKeepsMachine: false, mountedHome: true },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });

  describe("kubernetes mounted home", () => {
    const provider = env.provider(mounted);

    it("mounts homes/<home key> of the claim: what the pod writes is in the claim's folder, byte for byte, with no export", async () => {
      const homeKey = `mounted-${Date.now()}`;
      const m = await provider.provision({ computerId: "mounted", homeKey });
      owned.push(m);
      const pod = podOf(m);
      expect(pod.spec.securityContext.fsGroup).toBe(1000);
      expect(pod.spec.volumes).toContainEqual({ name: "home", persistentVolumeClaim: { claimName: CLAIM } });
      expect(pod.spec.containers[0].volumeMounts).toContainEqual({
        name: "home",
        mountPath: m.workspacePath,
        subPath: `homes/${homeKey}`,
      });
      expect(pod.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
        {
          labelSelector: { matchLabels: APP_LABELS },
          namespaces: [APP_NAMESPACE],
          topologyKey: "kubernetes.io/hostname",
        },
      ]);
      const bytes = randomBytes(3 * 1024 * 1024 + 17);
      await m.files.write("work/blob.bin", bytes);
      const made = await m.exec({ shell: "mkdir -p 'work/ünï' && printf 'from the pod\\n' > 'work/ünï/note.txt'" });
      expect(made.exitCode).toBe(0);
      const inPod = text((await m.exec({ argv: ["sha256sum", "work/blob.bin"] })).stdout).split(" ")[0];
      const home = join(claimDir, "homes", homeKey);
      expect(sha256(await readFile(join(home, "work/blob.bin")))).toBe(inPod);
      expect(sha256(await readFile(join(home, "work/blob.bin")))).toBe(sha256(bytes));
      expect(await readFile(join(home, "work/ünï/note.txt"), "utf8")).toBe("from the pod\n");
      // Stop deletes the pod; the home stays in the claim and the next pod mounts it.
      await m.stop();
      const next = await provider.provision({ computerId: "mounted", homeKey });
      owned.push(next);
      expect(text(await next.files.read("work/ünï/note.txt"))).toBe("from the pod\n");
    });

    it("a claim without the colocation settings is INVALID_ARGUMENT naming them, from code and from the environment", () => {
      const base = { kubeConfig: fixture.kubeConfig(), namespace: TEST_NAMESPACE, image: env.image };
      const thrown = (fn: () => unknown) => {
        try {
          fn();
        } catch (error) {
          return error as { code: string; message: string };
        }
        throw new Error("expected INVALID_ARGUMENT");
      };
      const both = thrown(() => kubernetesProvider({ ...base, homeClaim: CLAIM }, {}));
      expect(both.code).toBe("INVALID_ARGUMENT");
      expect(both.message).toContain("KUBERNETES_SANDBOX_HOME_COLOCATE_NAMESPACE");
      expect(both.message).toContain("KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS");
      const labels = thrown(() =>
        kubernetesProvider(base, {
          KUBERNETES_SANDBOX_HOME_CLAIM: CLAIM,
          KUBERNETES_SANDBOX_HOME_COLOCATE_NAMESPACE: "x",
        }),
      );
      expect(labels.code).toBe("INVALID_ARGUMENT");
      expect(labels.message).toContain("KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS");
      expect(labels.message).not.toContain("KUBERNETES_SANDBOX_HOME_COLOCATE_NAMESPACE (");
      const fromEnv = kubernetesProvider(base, {
        KUBERNETES_SANDBOX_HOME_CLAIM: CLAIM,
        KUBERNETES_SANDBOX_HOME_COLOCATE_NAMESPACE: APP_NAMESPACE,
        KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS: JSON.stringify(APP_LABELS),
      });
      expect(fromEnv.capabilities.mountedHome).toBe(true);
    });

    it("with an object store the claim is ignored: the home is copied as usual", async () => {
      const copied = env.provider({ ...mounted, objectStorageBucket: "homes-bucket" });
      expect(copied.capabilities.mountedHome).toBe(false);
      const fromEnv = kubernetesProvider(
        { kubeConfig: fixture.kubeConfig(), namespace: TEST_NAMESPACE, image: env.image },
        { KUBERNETES_SANDBOX_HOME_CLAIM: CLAIM, OBJECT_STORAGE_BUCKET: "homes-bucket" },
      );
      expect(fromEnv.capabilities.mountedHome).toBe(false);
      const homeKey = `object-store-${Date.now()}`;
      const m = await copied.provision({ computerId: "object-store", homeKey });
      owned.push(m);
      const pod = podOf(m);
      expect(pod.spec.volumes.filter((v: Json) => v.persistentVolumeClaim)).toEqual([]);
      expect(pod.spec.affinity).toBeUndefined();
      await m.files.write("copied.txt", new TextEncoder().encode("in the pod only"));
      await expect(readFile(join(claimDir, "homes", homeKey, "copied.txt"))).rejects.toMatchObject({ code: "ENOENT" });
      // Copied homes import on a running pod, as without a claim.
      await m.files.importWorkspace(await m.files.exportWorkspace());
      expect(text(await m.files.read("copied.txt"))).toBe("in the pod only");
    });

    it("a pod made before the claim was set keeps copying its home; a mounted one refuses a running import", async () => {
      const plain = env.provider();
      const old = await plain.provision({ computerId: "before-claim", homeKey: `before-${Date.now()}` });
      owned.push(old);
      await old.files.write("kept.txt", new TextEncoder().encode("copied"));
      const again = await provider.reconnect(old.ref);
      expect(again).not.toBe("gone");
      const reconnected = again as Machine;
      await reconnected.files.importWorkspace(await reconnected.files.exportWorkspace());
      expect(text(await reconnected.files.read("kept.txt"))).toBe("copied");
      const running = await provider.provision({ computerId: "running", homeKey: `running-${Date.now()}` });
      owned.push(running);
      const refused = await failureOf(running.files.importWorkspace(await reconnected.files.exportWorkspace()));
      expect(refused.code).toBe("CONFLICT");
    });

    it("an affinity no pod meets stays Pending as the scheduler leaves it, and the ready timeout says why", async () => {
      const lonely = env.provider({ ...mounted, homeColocateLabels: { app: "no-such-api" }, readyTimeoutMs: 2500 });
      const homeKey = `unschedulable-${Date.now()}`;
      const core = fixture.kubeConfig().makeApiClient(CoreV1Api);
      const provisioning = failureOf(lonely.provision({ computerId: "unschedulable", homeKey }));
      await new Promise((r) => setTimeout(r, 1000));
      const [pending] = (
        await core.listNamespacedPod({
          namespace: TEST_NAMESPACE,
          labelSelector: `agent-computer.org/home-key=${homeKey}`,
        })
      ).items;
      expect(pending?.status?.phase).toBe("Pending");
      expect(pending?.status?.conditions).toContainEqual(
        expect.objectContaining({ type: "PodScheduled", status: "False", reason: "Unschedulable" }),
      );
      const error = await provisioning;
      expect(error.code).toBe("TIMEOUT");
      expect(error.message).toContain("didn't match pod affinity rules");
      expect(error.message).toContain('{"app":"no-such-api"}');
      expect(error.message).toContain("KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS");
      // The provider deleted the pod it could not start.
      expect(
        (
          await core.listNamespacedPod({
            namespace: TEST_NAMESPACE,
            labelSelector: `agent-computer.org/home-key=${homeKey}`,
          })
        ).items,
      ).toEqual([]);
    });
  });
}
