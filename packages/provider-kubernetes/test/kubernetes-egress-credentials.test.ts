import { createPublicKey, randomBytes, X509Certificate } from "node:crypto";
import type { Logger, Machine, OpContext } from "@agent-computer/core";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { issueInterceptionCertificates } from "@agent-computer/egress";
import {
  authorizationSeen,
  computerShell,
  credentialInjectionCases,
  expectNoProcessHolds,
  fixtureApi,
} from "@agent-computer/testing/provider-test";
import { CoreV1Api, type V1Pod, type V1Volume } from "@kubernetes/client-node";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EGRESS_CONTAINER_NAME } from "../src/egress-fence-manifest.js";
import type { Json } from "./fixture-json.js";
import { kubernetesTestEnvironment, TEST_NAMESPACE } from "./kubernetes-test-environment.js";

// Credentials added on the way out on Kubernetes (issue 53; README, "Egress
// by policy"), on the wire fixture whose pods are real containers. As in
// provider-docker's docker-egress-credentials.test.ts, the fixture API has
// its own CA, which only the proxy trusts (`egressUpstreamCa`); the test
// (the cluster's operator here) attaches the pod's network namespace to the
// API's network, so the proxy's resolver finds its names.
const env = await kubernetesTestEnvironment("kubernetes egress credentials");
if (!env.missing) {
  const { fixture, docker } = env;
  const run = Math.random().toString(36).slice(2, 8);
  const token = `tok-${randomBytes(16).toString("hex")}`;
  const password = `pw-${randomBytes(16).toString("hex")}`;
  const hosts = ["api.example.test", "basic.example.test", "untouched.example.test"];
  const fixtureTls = issueInterceptionCertificates("fixture", hosts);
  const core = fixture.kubeConfig().makeApiClient(CoreV1Api);
  const machines: Machine[] = [];
  let provider: ReturnType<typeof env.provider>;
  let fenced: Machine;
  let api: Awaited<ReturnType<typeof fixtureApi>>;

  const podOf = (m: Machine) => m.ref.slice(`kubernetes:${TEST_NAMESPACE}/`.length);
  const sh = computerShell(() => fenced);
  // What the provider logs while it provisions and destroys these computers (none of it may hold a secret).
  const logged: string[] = [];
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    logged.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  const logger: Logger = { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
  const ctx: OpContext = { logger };
  const credentialed = {
    name: "api-credentials",
    allow: hosts,
    allowPrivate: [] as string[],
    credentials: [
      { host: "api.example.test", header: { name: "Authorization", value: `Bearer ${token}` } },
      { host: "basic.example.test", basic: { username: "bot-user", password } },
    ],
  };

  beforeAll(async () => {
    const image = await computerImageRef();
    api = await fixtureApi(docker, image, `ac-k8s-egress-cred-${run}`, "10.219", hosts, fixtureTls);
    credentialed.allowPrivate = [api.subnet];
    provider = env.provider({
      seccompLocalhostProfile: "agent-computer/chromium.json",
      egressUpstreamCa: fixtureTls.caCertificate,
    });
    fenced = await provider.provision(
      { computerId: "credentialed", homeKey: `k8s-egress-cred-${run}`, egress: credentialed },
      ctx,
    );
    machines.push(fenced);
    // The operator's step: the pod's network reaches the fixture API, and its resolver the API's names.
    const holder = fixture.networkHolderOf(TEST_NAMESPACE, podOf(fenced)) as string;
    await docker.getNetwork(api.network).connect({ Container: holder });
  }, 240_000);

  afterAll(async () => {
    for (const machine of machines) await machine.destroy().catch(() => {});
    await api?.remove();
  }, 60_000);

  describe("kubernetes egress credentials", () => {
    it("makes a Secret owned by the pod, whose credentials only the egress container mounts (0400, read-only)", async () => {
      const pod = fixture.podJson(TEST_NAMESPACE, podOf(fenced)) as Json;
      const secret = fixture.secrets.get(TEST_NAMESPACE, `${podOf(fenced)}-egress`) as Json;
      expect(secret.metadata.ownerReferences).toEqual([
        { apiVersion: "v1", kind: "Pod", name: podOf(fenced), uid: pod.metadata.uid },
      ]);
      const volumes = pod.spec.volumes as Json[];
      const secretVolumes = volumes.filter((v) => v.secret);
      expect(secretVolumes.map((v) => [v.name, v.secret.items.map((i: Json) => i.key), v.secret.defaultMode])).toEqual([
        ["egress-credentials", ["credentials.json", "upstream-ca.pem"], 0o400],
        ["egress-ca", ["ca.pem", "bundle.pem"], 0o444],
      ]);
      const mountsOf = (name: string) =>
        (((pod.spec.containers as Json[]).find((c) => c.name === name)?.volumeMounts ?? []) as Json[]).map(
          (m) => m.name,
        );
      expect(mountsOf(EGRESS_CONTAINER_NAME)).toContain("egress-credentials");
      for (const name of ["computer", "display"]) {
        expect(mountsOf(name)).toContain("egress-ca");
        expect(mountsOf(name)).not.toContain("egress-credentials");
      }
      // In the egress container: the kubelet's fsGroup gives the group read (the proxy's uid has it), nobody else reads.
      const egress = fixture.containerOf(TEST_NAMESPACE, podOf(fenced), EGRESS_CONTAINER_NAME) as string;
      const seen = await dockerExec(docker, egress, [
        "sh",
        "-c",
        "id -u; stat -c '%a %u %g' /etc/agent-computer-egress-credentials/credentials.json; touch /etc/agent-computer-egress-credentials/x 2>&1",
      ]);
      const [uid, stat, writable] = seen.out.trim().split("\n");
      expect(uid).toBe("65534");
      expect(stat).toBe("440 0 1000");
      expect(writable).toContain("Read-only file system");
    });

    credentialInjectionCases({ sh, token, password, fixtureCaCertificate: fixtureTls.caCertificate });

    it("leaves the token, the password and the proxy's key nowhere in the bot's or the display's container, nor in the pod", async () => {
      for (const host of ["api", "basic"]) {
        const used = await sh(`curl -sS --max-time 10 https://${host}.example.test:8443/`);
        expect(authorizationSeen(used.out)).not.toBe("");
      }
      const secret = fixture.secrets.get(TEST_NAMESPACE, `${podOf(fenced)}-egress`) as Json;
      const proxyFile = JSON.parse(Buffer.from(secret.data["credentials.json"], "base64").toString()) as Json;
      const keyLine = (proxyFile.key as string).split(/\r?\n/)[3] as string;
      expect(keyLine.length).toBeGreaterThan(40);
      const grepFiles =
        "grep -rlF --devices=skip -f /dev/stdin / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true";
      const display = fixture.containerOf(TEST_NAMESPACE, podOf(fenced), "display") as string;
      // Files, the mounted CA folder among them (one pass, a needle a line), and a control file that holds the token.
      const needles = `${token}\n${password}\n${keyLine}\n`;
      expect((await sh(grepFiles, needles)).out.trim(), "bot files holding one").toBe("");
      expect((await dockerExec(docker, display, ["sh", "-c", grepFiles], needles)).out.trim()).toBe("");
      await sh("cat > control-file", token);
      expect((await sh(grepFiles, needles)).out).toContain("control-file");
      await sh("rm control-file");
      // Environment, command lines and readable memory of every process the bot sees.
      await expectNoProcessHolds(sh, [token, password, keyLine], token);
      // The pod as the API server holds it, and as a client that may read pods reads it.
      const read: V1Pod = await core.readNamespacedPod({ name: podOf(fenced), namespace: TEST_NAMESPACE });
      for (const text of [JSON.stringify(fixture.podJson(TEST_NAMESPACE, podOf(fenced))), JSON.stringify(read)]) {
        for (const needle of [token, password, keyLine, "PRIVATE KEY"]) expect(text).not.toContain(needle);
      }
      // The CA's key was dropped: the one key in the Secret is the proxy's certificate's, not the CA's.
      const ca = new X509Certificate((await sh("cat /etc/agent-computer/egress/ca.pem")).out);
      expect(ca.ca).toBe(true);
      const caPublic = ca.publicKey.export({ type: "spki", format: "der" });
      expect(createPublicKey(proxyFile.key).export({ type: "spki", format: "der" }).equals(caPublic)).toBe(false);
      const listed = await sh("ls /etc/agent-computer/egress; env | grep -c PRIVATE; true");
      expect(listed.out.split("\n").slice(0, 2)).toEqual(["bundle.pem", "ca.pem"]);
    });

    it("refuses a Secret without the Role's create secrets, deleting the pod, and names secrets in the error", async () => {
      fixture.forbid("create", "secrets");
      try {
        const failure = await provider
          .provision(
            { computerId: "forbidden", homeKey: `k8s-egress-cred-forbidden-${run}`, egress: credentialed },
            ctx,
          )
          .then(
            () => undefined,
            (error: unknown) => error as Error & { code: string },
          );
        expect(failure).toMatchObject({ code: "UNAVAILABLE" });
        expect(failure?.message).toContain("secrets");
        // Nor in what the error carries: its details and the client's error beneath it.
        for (const text of [failure?.message, JSON.stringify(failure), String((failure as { cause?: unknown })?.cause)])
          expect(text).not.toContain(token);
        const left = await core.listNamespacedPod({
          namespace: TEST_NAMESPACE,
          labelSelector: "agent-computer.org/computer-id=forbidden",
        });
        expect(left.items).toEqual([]);
      } finally {
        fixture.allow("create", "secrets");
      }
    });

    it("deletes the Secret with the pod at destroy (its owner), as the garbage collector does", async () => {
      const other = await provider.provision(
        { computerId: "short-lived", homeKey: `k8s-egress-cred-short-${run}`, egress: credentialed },
        ctx,
      );
      const name = `${podOf(other)}-egress`;
      expect((await core.readNamespacedSecret({ name, namespace: TEST_NAMESPACE })).metadata?.name).toBe(name);
      await other.destroy(ctx);
      await expect
        .poll(
          () =>
            core.readNamespacedSecret({ name, namespace: TEST_NAMESPACE }).then(
              () => 200,
              (e) => e.code,
            ),
          {
            timeout: 10_000,
          },
        )
        .toBe(404);
      // The provider's log of these provisions, the refused one and this destroy: there, and no secret in it.
      expect(logged.join("\n")).toContain("kubernetes machine destroyed");
      for (const needle of [token, password, "PRIVATE KEY"]) expect(logged.join("\n")).not.toContain(needle);
    }, 120_000);

    it("the fixture refuses what kube-apiserver refuses of Secrets and secret volumes", async () => {
      const secret = (name: string, data: Record<string, string>) => ({ metadata: { name }, data });
      const base64 = Buffer.from("x").toString("base64");
      await expect(
        core.createNamespacedSecret({ namespace: TEST_NAMESPACE, body: secret(`bad-key-${run}`, { "a/b": base64 }) }),
      ).rejects.toMatchObject({ code: 422 });
      await expect(
        core.createNamespacedSecret({ namespace: TEST_NAMESPACE, body: secret(`Bad_Name-${run}`, {}) }),
      ).rejects.toMatchObject({ code: 422 });
      const owned = {
        metadata: { name: `no-uid-${run}`, ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: "p", uid: "" }] },
      };
      await expect(core.createNamespacedSecret({ namespace: TEST_NAMESPACE, body: owned })).rejects.toMatchObject({
        code: 422,
      });
      const twice = secret(`twice-${run}`, { a: base64 });
      await core.createNamespacedSecret({ namespace: TEST_NAMESPACE, body: twice });
      await expect(core.createNamespacedSecret({ namespace: TEST_NAMESPACE, body: twice })).rejects.toMatchObject({
        code: 409,
      });
      await core.deleteNamespacedSecret({ name: `twice-${run}`, namespace: TEST_NAMESPACE });
      // Fields a V1Volume may hold where kube-apiserver refuses them (an out-of-range mode, two sources): its own type.
      const pod = (volume: V1Volume, mount = volume.name): V1Pod => ({
        metadata: { name: `k8s-egress-cred-invalid-${run}` },
        spec: {
          containers: [{ name: "main", image: "unused", volumeMounts: [{ name: mount, mountPath: "/x" }] }],
          volumes: [volume],
        },
      });
      for (const body of [
        pod({ name: "s", secret: { secretName: "s", defaultMode: 0o1000 } }),
        pod({ name: "s", secret: { secretName: "s", items: [{ key: "a", path: "../a" }] } }),
        pod({ name: "s", secret: { secretName: "s", items: [{ key: "a", path: "/a" }] } }),
        pod({ name: "s", secret: { secretName: "s", items: [{ key: "a", path: "a", mode: 0o1000 }] } }),
        pod({ name: "s", secret: {} }),
        pod({ name: "s", secret: { secretName: "s" }, emptyDir: {} }),
        pod({ name: "s", secret: { secretName: "s" } }, "missing"),
      ]) {
        await expect(core.createNamespacedPod({ namespace: TEST_NAMESPACE, body })).rejects.toMatchObject({
          code: 422,
        });
      }
    });
  });
}

/** Runs `cmd` in an engine container as its own user, with `stdin` when given; its stdout and exit code. */
async function dockerExec(
  docker: Docker,
  id: string,
  cmd: string[],
  stdin?: string,
): Promise<{ out: string; exitCode: number | null }> {
  const exec = await docker
    .getContainer(id)
    .exec({ Cmd: cmd, AttachStdin: stdin !== undefined, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: stdin !== undefined });
  const out: Buffer[] = [];
  const sink = { write: (chunk: Buffer) => out.push(chunk) } as unknown as NodeJS.WritableStream;
  docker.modem.demuxStream(stream, sink, { write: () => true } as unknown as NodeJS.WritableStream);
  if (stdin !== undefined) stream.end(stdin);
  await new Promise((done) => stream.on("end", done));
  return { out: Buffer.concat(out).toString(), exitCode: (await exec.inspect()).ExitCode ?? null };
}
