/**
 * A local Kubernetes API server for tests: it speaks the wire protocol of
 * exactly the calls provider-kubernetes makes, and backs every pod with a
 * real container of the Docker engine made from the pod's image, so
 * commands, files and homes really run. It is an emulator of the API, not
 * a mock of the provider: the real @kubernetes/client-node talks to it over
 * HTTP and websockets.
 *
 * Implemented (core/v1, JSON only):
 * - POST   /api/v1/namespaces/{ns}/pods           201 Pod; 404 Status when the namespace is missing
 *                                                  (details.kind "namespaces"); 409 AlreadyExists;
 *                                                  422 Invalid without a name or image
 * - GET    /api/v1/namespaces/{ns}/pods/{name}    200 Pod with phase, conditions (Ready),
 *                                                  containerStatuses (waiting reasons such as
 *                                                  ErrImagePull), podIP; 404 NotFound
 * - GET    /api/v1/namespaces/{ns}/pods?labelSelector=k=v,k2=v2   200 PodList (equality selectors)
 * - DELETE /api/v1/namespaces/{ns}/pods/{name}?gracePeriodSeconds=N   200 Pod with deletionTimestamp;
 *                                                  the container is stopped with that grace (0 removes
 *                                                  it at once) and the pod disappears after
 * - GET    /api/v1/namespaces/{ns}/pods/{name}/exec?command=..&container=..&stdin=..&stdout=..&stderr=..
 *          websocket upgrade with subprotocol v5.channel.k8s.io (unless turned off) or
 *          v4.channel.k8s.io; binary frames whose first byte is the channel: 0 stdin, 1 stdout,
 *          2 stderr, 3 status (a Status: Success, or NonZeroExitCode with details.causes
 *          [{reason: ExitCode}], or InternalError when the container went away), 4 resize (ignored),
 *          255 close (v5: [255, 0] ends stdin). Refused upgrades answer a Status with 404/403/400.
 * - GET /api, /apis, /api/v1, /version: discovery as kubectl reads it (core/v1 pods and pods/exec).
 * - Every request needs `Authorization: Bearer <token>` (401 otherwise); `forbid()` makes a verb
 *   answer 403 Forbidden as RBAC would; `failNext()` answers the next call of a verb with a status
 *   (such as 409); `cutNextExec()` drops the next exec connection after some stdin bytes.
 * Pod spec fields honoured: containers[0] image, command, args, env, workingDir, resources.limits
 * (cpu, memory), readinessProbe.exec (Ready once it passes), securityContext runAsUser/runAsGroup,
 * allowPrivilegeEscalation false (no-new-privileges), capabilities.drop ALL, a memory emptyDir at
 * /dev/shm (shm size), shareProcessNamespace (an init reaping orphans), terminationGracePeriodSeconds.
 * Volumes: a persistentVolumeClaim volume of a claim made with `addClaim(namespace, name, hostDir)`
 * (a PVC backed by a host folder) is bind-mounted at each of its mounts' mountPath, `subPath`
 * made on first use owned by the pod's fsGroup as the kubelet would; a claim that does not exist
 * leaves the pod Pending (PodScheduled False, `persistentvolumeclaim "x" not found`).
 * Scheduling, on one node: a required podAffinity term (matchLabels, namespaces) must match a
 * running pod, a computer pod or one made with `addForeignPod` (the pods that hold a volume);
 * otherwise the pod stays Pending with PodScheduled False, reason Unschedulable and the
 * scheduler's message, as the real API shows it.
 * Not implemented: watch, patch, other resources, protobuf, tty exec, preferred affinity, image
 * pulls (an image missing on the engine stays ErrImagePull, so the pod never becomes Ready).
 */
import { randomUUID } from "node:crypto";
import { chownSync, existsSync, mkdirSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { computerSeccompProfile } from "@agent-computer/desktop-runtime";
import type { KubeConfig } from "@kubernetes/client-node";
import type Docker from "dockerode";
import { WebSocket, WebSocketServer } from "ws";
import { fixtureKubeConfig } from "./fixture-kube-config.js";

// biome-ignore lint/suspicious/noExplicitAny: pod JSON as the API shapes it; the fixture reads and writes fields of any kind.
export type Json = Record<string, any>;
/** A verb the provider uses, as RBAC names it (exec is `create pods/exec`). */
export type FixtureVerb = "create" | "get" | "list" | "delete" | "exec";

interface PodRecord {
  pod: Json;
  containerId?: string;
  deleting?: boolean;
}

const FIXTURE_LABEL = "org.agent-computer.kubernetes-fixture";
const OUTPUT_IN_FLIGHT = 4 * 1024 * 1024;

export class KubernetesWireFixture {
  /** Offer v5.channel.k8s.io; false makes exec fall back to v4 as an older cluster would. */
  offerV5 = true;
  readonly token = `fixture-token-${randomUUID()}`;
  private readonly id = randomUUID().slice(0, 8);
  private readonly pods = new Map<string, PodRecord>();
  private readonly forbidden = new Set<FixtureVerb>();
  private readonly failures = new Map<FixtureVerb, number>();
  private cut: { afterBytes: number } | undefined;
  private readonly claims = new Map<string, string>();
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private resourceVersion = 1000;
  private port = 0;
  /** Exec subprotocols chosen, in order (tests check v5 and v4 both happened). */
  readonly protocolsUsed: string[] = [];

  constructor(
    private readonly docker: Docker,
    private readonly namespaces: readonly string[],
    /**
     * Serve HTTPS with this key and certificate instead of plain HTTP: Go
     * clients (kubectl) send a bearer token only over TLS.
     */
    private readonly tls?: { key: string; cert: string },
  ) {
    this.wss = new WebSocketServer({
      noServer: true,
      handleProtocols: (offered) => {
        if (this.offerV5 && offered.has("v5.channel.k8s.io")) return "v5.channel.k8s.io";
        return offered.has("v4.channel.k8s.io") ? "v4.channel.k8s.io" : false;
      },
    });
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.route(req, res).catch((error: Error) => this.status(res, 500, "InternalError", error.message));
    };
    this.server = tls ? createTlsServer({ key: tls.key, cert: tls.cert }, handler) : createServer(handler);
    this.server.on("upgrade", (req, socket, head) => {
      this.upgrade(req, socket as Duplex, head).catch(() => socket.destroy());
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** The server's address: plain HTTP on loopback, or HTTPS when made with `tls`. */
  get address(): string {
    return `${this.tls ? "https" : "http"}://127.0.0.1:${this.port}`;
  }

  /** A kubeconfig for the real client: the server on loopback (a self-signed certificate, hence skipTLSVerify) with a bearer token. */
  kubeConfig(token = this.token): KubeConfig {
    return fixtureKubeConfig(this.address, token);
  }

  /** Makes `verb` answer 403 Forbidden until `allow`. */
  forbid(verb: FixtureVerb): void {
    this.forbidden.add(verb);
  }
  allow(verb: FixtureVerb): void {
    this.forbidden.delete(verb);
  }
  /** The next call of `verb` answers `code` (409 Conflict, 500, ...). */
  failNext(verb: FixtureVerb, code: number): void {
    this.failures.set(verb, code);
  }
  /** Drops the next exec that carries stdin once more than `afterBytes` of it arrived. */
  cutNextExec(afterBytes: number): void {
    this.cut = { afterBytes };
  }

  /** A PersistentVolumeClaim in `namespace` whose volume is the host folder `hostDir`. */
  addClaim(namespace: string, name: string, hostDir: string): void {
    this.claims.set(`${namespace}/${name}`, hostDir);
  }

  /**
   * A running pod that is not a computer (no container here), such as the
   * API pod that holds the home claim: affinity rules see it, and so do
   * `get` and `list`.
   */
  addForeignPod(namespace: string, name: string, labels: Record<string, string>): void {
    const now = new Date().toISOString();
    this.pods.set(`${namespace}/${name}`, {
      pod: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name,
          namespace,
          labels,
          uid: randomUUID(),
          resourceVersion: String(++this.resourceVersion),
          creationTimestamp: now,
        },
        spec: { containers: [{ name: "app", image: "foreign" }], nodeName: "fixture-node" },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }] },
      },
    });
  }

  /** The pod as the API would show it, or undefined. */
  podJson(namespace: string, name: string): Json | undefined {
    return this.pods.get(`${namespace}/${name}`)?.pod;
  }

  /** The engine container behind a pod. */
  containerOf(namespace: string, name: string): string | undefined {
    return this.pods.get(`${namespace}/${name}`)?.containerId;
  }

  /** Deletes a pod as `kubectl delete --grace-period=N` or an eviction would. */
  async deletePod(namespace: string, name: string, gracePeriodSeconds = 0): Promise<void> {
    const record = this.pods.get(`${namespace}/${name}`);
    if (record) await this.beginDelete(`${namespace}/${name}`, record, gracePeriodSeconds, true);
  }

  async close(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    const left = await this.docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${FIXTURE_LABEL}=${this.id}`] }),
    });
    await Promise.all(
      left.map((c) =>
        this.docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => {}),
      ),
    );
  }

  // --- REST ---------------------------------------------------------------

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.authorized(req)) return this.status(res, 401, "Unauthorized", "Unauthorized");
    const url = new URL(req.url ?? "/", "http://fixture");
    const discovery = req.method === "GET" ? this.discovery(url.pathname) : undefined;
    if (discovery) return this.json(res, 200, discovery);
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/.exec(url.pathname);
    if (!match) return this.status(res, 404, "NotFound", "the server could not find the requested resource");
    const namespace = decodeURIComponent(match[1] as string);
    const name = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
    const verb: FixtureVerb | undefined =
      req.method === "POST" && !name
        ? "create"
        : req.method === "GET"
          ? name
            ? "get"
            : "list"
          : req.method === "DELETE" && name
            ? "delete"
            : undefined;
    if (!verb) return this.status(res, 405, "MethodNotAllowed", `${req.method} is not supported here`);
    if (this.refused(res, verb, namespace)) return;
    if (!this.namespaces.includes(namespace)) {
      return this.status(res, 404, "NotFound", `namespaces "${namespace}" not found`, {
        name: namespace,
        kind: "namespaces",
      });
    }
    if (verb === "create") return this.create(req, res, namespace);
    if (verb === "list") return this.json(res, 200, this.list(namespace, url.searchParams.get("labelSelector")));
    const key = `${namespace}/${name}`;
    const record = this.pods.get(key);
    if (!record) return this.status(res, 404, "NotFound", `pods "${name}" not found`, { name, kind: "pods" });
    if (verb === "get") return this.json(res, 200, record.pod);
    const grace = Number(
      url.searchParams.get("gracePeriodSeconds") ?? record.pod.spec?.terminationGracePeriodSeconds ?? 30,
    );
    await this.beginDelete(key, record, Number.isFinite(grace) ? grace : 30, false);
    return this.json(res, 200, record.pod);
  }

  /** API discovery, as kubectl reads it before a `get`: core/v1 with pods and pods/exec only. */
  private discovery(path: string): Json | undefined {
    if (path === "/api")
      return {
        kind: "APIVersions",
        versions: ["v1"],
        serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: `127.0.0.1:${this.port}` }],
      };
    if (path === "/apis") return { kind: "APIGroupList", apiVersion: "v1", groups: [] };
    if (path === "/api/v1")
      return {
        kind: "APIResourceList",
        groupVersion: "v1",
        resources: [
          {
            name: "pods",
            singularName: "",
            namespaced: true,
            kind: "Pod",
            verbs: ["create", "delete", "get", "list"],
            shortNames: ["po"],
            categories: ["all"],
          },
          { name: "pods/exec", singularName: "", namespaced: true, kind: "PodExecOptions", verbs: ["create", "get"] },
        ],
      };
    if (path === "/version")
      return { major: "1", minor: "30", gitVersion: "v1.30.0-agent-computer-fixture", platform: "linux/amd64" };
    return undefined;
  }

  private authorized(req: IncomingMessage): boolean {
    return req.headers.authorization === `Bearer ${this.token}`;
  }

  /** RBAC and one-shot failures; true when the answer was sent. */
  private refused(res: ServerResponse, verb: FixtureVerb, namespace: string): boolean {
    const resource = verb === "exec" ? "pods/exec" : "pods";
    const rbacVerb = verb === "exec" ? "create" : verb;
    if (this.forbidden.has(verb)) {
      this.status(
        res,
        403,
        "Forbidden",
        `${resource} is forbidden: User "system:serviceaccount:agent-computer:worker" cannot ${rbacVerb} resource "${resource}" in API group "" in the namespace "${namespace}"`,
        { kind: resource },
      );
      return true;
    }
    const code = this.failures.get(verb);
    if (code !== undefined) {
      this.failures.delete(verb);
      const reason = code === 409 ? "AlreadyExists" : code === 500 ? "InternalError" : "Failure";
      this.status(res, code, reason, `injected ${code} for ${rbacVerb} ${resource}`, { kind: resource });
      return true;
    }
    return false;
  }

  private async create(req: IncomingMessage, res: ServerResponse, namespace: string): Promise<void> {
    const body = JSON.parse(await readBody(req)) as Json;
    const name = body.metadata?.name as string | undefined;
    const container = body.spec?.containers?.[0] as Json | undefined;
    if (!name || !container?.image) {
      return this.status(
        res,
        422,
        "Invalid",
        "Pod is invalid: metadata.name and spec.containers[0].image are required",
      );
    }
    const key = `${namespace}/${name}`;
    if (this.pods.has(key)) {
      return this.status(res, 409, "AlreadyExists", `pods "${name}" already exists`, { name, kind: "pods" });
    }
    const now = new Date().toISOString();
    const pod: Json = {
      ...body,
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        ...body.metadata,
        namespace,
        uid: randomUUID(),
        resourceVersion: String(++this.resourceVersion),
        creationTimestamp: now,
      },
      status: {
        phase: "Pending",
        conditions: [{ type: "PodScheduled", status: "True", lastTransitionTime: now }],
        containerStatuses: [
          {
            name: container.name,
            image: container.image,
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: "ContainerCreating" } },
          },
        ],
      },
    };
    const record: PodRecord = { pod };
    this.pods.set(key, record);
    void this.run(key, record).catch(() => {});
    this.json(res, 201, pod);
  }

  private list(namespace: string, selector: string | null): Json {
    const wanted = (selector ?? "")
      .split(",")
      .filter(Boolean)
      .map((term) => {
        const [k, v] = term.split(/!?==?/) as [string, string];
        return { k, v, negate: term.includes("!=") };
      });
    const items = [...this.pods.entries()]
      .filter(([key]) => key.startsWith(`${namespace}/`))
      .map(([, r]) => r.pod)
      .filter((pod) => wanted.every(({ k, v, negate }) => (pod.metadata?.labels?.[k] === v) !== negate));
    return { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: String(this.resourceVersion) }, items };
  }

  // --- pods backed by containers -----------------------------------------

  /** Starts the pod's container and runs its readiness probe until it passes. */
  private async run(key: string, record: PodRecord): Promise<void> {
    const pod = record.pod;
    const spec = pod.spec as Json;
    const container = spec.containers[0] as Json;
    const statusOf = () => pod.status.containerStatuses[0] as Json;
    const [podNamespace] = key.split("/") as [string];
    const unschedulable = this.unschedulable(podNamespace, spec);
    if (unschedulable) {
      // As the scheduler leaves it: Pending, PodScheduled False, no container statuses.
      pod.status.conditions = [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: unschedulable,
          lastProbeTime: null,
          lastTransitionTime: new Date().toISOString(),
        },
      ];
      delete pod.status.containerStatuses;
      return;
    }
    spec.nodeName = "fixture-node";
    const binds = this.binds(podNamespace, spec, container);
    const exists = await this.docker
      .getImage(container.image)
      .inspect()
      .then(
        () => true,
        () => false,
      );
    if (!exists) {
      statusOf().state = {
        waiting: { reason: "ErrImagePull", message: `image "${container.image}" not found on the node` },
      };
      return;
    }
    const security = { ...spec.securityContext, ...container.securityContext } as Json;
    const shm = (spec.volumes ?? []).find(
      (v: Json) =>
        v.emptyDir?.medium === "Memory" &&
        (container.volumeMounts ?? []).some((m: Json) => m.name === v.name && m.mountPath === "/dev/shm"),
    );
    const [namespace, name] = key.split("/") as [string, string];
    const created = await this.docker.createContainer({
      name: `k8s-fixture-${this.id}-${namespace}-${name}`.slice(0, 120),
      Image: container.image,
      Entrypoint: container.command,
      Cmd: container.args ?? [],
      WorkingDir: container.workingDir,
      User:
        security.runAsUser === undefined
          ? undefined
          : `${security.runAsUser}:${security.runAsGroup ?? security.runAsUser}`,
      Env: (container.env ?? []).map((e: Json) => `${e.name}=${e.value ?? ""}`),
      Labels: { [FIXTURE_LABEL]: this.id, "io.kubernetes.pod.namespace": namespace, "io.kubernetes.pod.name": name },
      HostConfig: {
        Init: spec.shareProcessNamespace === true,
        ShmSize: shm?.emptyDir?.sizeLimit ? quantityBytes(shm.emptyDir.sizeLimit) : undefined,
        NanoCpus: container.resources?.limits?.cpu
          ? Math.round(cpuCores(container.resources.limits.cpu) * 1e9)
          : undefined,
        Memory: container.resources?.limits?.memory ? quantityBytes(container.resources.limits.memory) : undefined,
        CapDrop: security.capabilities?.drop?.includes("ALL") ? ["ALL"] : undefined,
        CapAdd: security.capabilities?.add,
        SecurityOpt: [
          ...(security.allowPrivilegeEscalation === false ? ["no-new-privileges:true"] : []),
          // A node that installed desktop-runtime's profile as a Localhost profile.
          ...(security.seccompProfile?.type === "Localhost" ? [`seccomp=${computerSeccompProfile()}`] : []),
        ],
        Privileged: security.privileged === true,
        Binds: binds,
      },
    });
    record.containerId = created.id;
    if (record.deleting) {
      await created.remove({ force: true }).catch(() => {});
      return;
    }
    await created.start();
    const info = await created.inspect();
    const started = new Date().toISOString();
    pod.status.phase = "Running";
    pod.status.podIP = Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress || undefined;
    pod.status.startTime = started;
    statusOf().state = { running: { startedAt: started } };
    statusOf().containerID = `docker://${created.id}`;
    const probe = container.readinessProbe?.exec?.command as string[] | undefined;
    for (;;) {
      if (record.deleting || !this.pods.has(key)) return;
      const ok = probe === undefined || (await this.execExitCode(created.id, probe)) === 0;
      if (ok) {
        statusOf().ready = true;
        pod.status.conditions.push(
          { type: "Ready", status: "True", lastTransitionTime: new Date().toISOString() },
          { type: "ContainersReady", status: "True", lastTransitionTime: new Date().toISOString() },
        );
        return;
      }
      await new Promise((r) => setTimeout(r, (container.readinessProbe?.periodSeconds ?? 10) * 1000));
    }
  }

  /** Why the scheduler could not place the pod (one node), or undefined when it can. */
  private unschedulable(namespace: string, spec: Json): string | undefined {
    for (const volume of spec.volumes ?? []) {
      const claim = volume.persistentVolumeClaim?.claimName as string | undefined;
      if (claim && !this.claims.has(`${namespace}/${claim}`))
        return `0/1 nodes are available: persistentvolumeclaim "${claim}" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`;
    }
    const terms = (spec.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) as Json[];
    const running = [...this.pods.entries()].filter(
      ([, r]) => r.pod.status?.phase === "Running" && !r.deleting && !r.pod.metadata?.deletionTimestamp,
    );
    for (const term of terms) {
      const wanted = (term.labelSelector?.matchLabels ?? {}) as Record<string, string>;
      const namespaces = (term.namespaces as string[] | undefined) ?? [namespace];
      const met = running.some(
        ([k, r]) =>
          namespaces.includes(k.split("/")[0] as string) &&
          Object.entries(wanted).every(([label, value]) => r.pod.metadata?.labels?.[label] === value),
      );
      if (!met)
        return "0/1 nodes are available: 1 node(s) didn't match pod affinity rules. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
    }
    return undefined;
  }

  /** Engine binds for the pod's claim volumes: the claim's host folder (or its subPath, made on first use). */
  private binds(namespace: string, spec: Json, container: Json): string[] {
    const binds: string[] = [];
    for (const mount of (container.volumeMounts ?? []) as Json[]) {
      const volume = ((spec.volumes ?? []) as Json[]).find((v) => v.name === mount.name);
      const claim = volume?.persistentVolumeClaim?.claimName as string | undefined;
      if (!claim) continue;
      const root = this.claims.get(`${namespace}/${claim}`) as string;
      const subPath = (mount.subPath as string | undefined) ?? "";
      if (subPath.split("/").includes("..") || subPath.startsWith("/")) throw new Error(`bad subPath ${subPath}`);
      const source = subPath ? join(root, subPath) : root;
      if (!existsSync(source)) {
        mkdirSync(source, { recursive: true, mode: 0o2775 });
        const group = spec.securityContext?.fsGroup as number | undefined;
        if (group !== undefined) chownSync(source, spec.securityContext?.runAsUser ?? 0, group);
      }
      binds.push(`${source}:${mount.mountPath}${mount.readOnly ? ":ro" : ""}`);
    }
    return binds;
  }

  private async execExitCode(containerId: string, cmd: string[]): Promise<number | null> {
    try {
      const exec = await this.docker
        .getContainer(containerId)
        .exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
      const stream = await exec.start({});
      await new Promise<void>((resolve) => {
        stream.on("data", () => {});
        stream.on("end", resolve);
        stream.on("close", resolve);
        stream.on("error", () => resolve());
      });
      return (await exec.inspect()).ExitCode ?? null;
    } catch {
      return null;
    }
  }

  private async beginDelete(key: string, record: PodRecord, grace: number, direct: boolean): Promise<void> {
    if (!record.deleting) {
      record.deleting = true;
      record.pod.metadata.deletionTimestamp = new Date(Date.now() + grace * 1000).toISOString();
      record.pod.metadata.deletionGracePeriodSeconds = grace;
      record.pod.metadata.resourceVersion = String(++this.resourceVersion);
    }
    const finish = async () => {
      const container = record.containerId ? this.docker.getContainer(record.containerId) : undefined;
      if (container && grace > 0) await container.stop({ t: grace }).catch(() => {});
      if (container) await container.remove({ force: true }).catch(() => {});
      this.pods.delete(key);
    };
    if (grace === 0 || direct) await finish();
    else void finish();
  }

  // --- pods/exec -----------------------------------------------------------

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fixture");
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    const refuse = (code: number, reason: string, message: string) => {
      const body = JSON.stringify(statusBody(code, reason, message));
      socket.end(
        `HTTP/1.1 ${code} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    };
    if (!this.authorized(req)) return refuse(401, "Unauthorized", "Unauthorized");
    if (!match) return refuse(404, "NotFound", "the server could not find the requested resource");
    const namespace = decodeURIComponent(match[1] as string);
    const name = decodeURIComponent(match[2] as string);
    if (this.forbidden.has("exec")) {
      return refuse(
        403,
        "Forbidden",
        `pods "${name}" is forbidden: User "system:serviceaccount:agent-computer:worker" cannot create resource "pods/exec" in API group "" in the namespace "${namespace}"`,
      );
    }
    const record = this.pods.get(`${namespace}/${name}`);
    if (!record) return refuse(404, "NotFound", `pods "${name}" not found`);
    if (!record.containerId || record.pod.status.phase !== "Running") {
      return refuse(400, "BadRequest", `pod ${name} is not running (phase ${record.pod.status.phase})`);
    }
    const command = url.searchParams.getAll("command");
    const withStdin = url.searchParams.get("stdin") === "true";
    const container = this.docker.getContainer(record.containerId);
    let exec: Docker.Exec;
    try {
      exec = await container.exec({
        Cmd: command,
        AttachStdin: withStdin,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      });
    } catch (error) {
      return refuse(400, "BadRequest", `container not running: ${(error as Error).message}`);
    }
    const stream = (await exec.start({ hijack: true, stdin: withStdin })) as Duplex;
    const cut = withStdin ? this.cut : undefined;
    if (cut) this.cut = undefined;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.protocolsUsed.push(ws.protocol);
      this.pipeExec(ws, stream, exec, record, withStdin, cut);
    });
  }

  private pipeExec(
    ws: WebSocket,
    stream: Duplex,
    exec: Docker.Exec,
    record: PodRecord,
    withStdin: boolean,
    cut: { afterBytes: number } | undefined,
  ): void {
    let finished = false;
    let stdinBytes = 0;
    // Engine output: 8-byte frame headers (stream id, size), demultiplexed to channels 1 and 2.
    let pending: Buffer = Buffer.alloc(0);
    let lastOutputAt = Date.now();
    stream.on("data", (chunk: Buffer) => {
      lastOutputAt = Date.now();
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= 8) {
        const size = pending.readUInt32BE(4);
        if (pending.length < 8 + size) break;
        const kind = pending[0];
        const payload = pending.subarray(8, 8 + size);
        pending = pending.subarray(8 + size);
        if ((kind === 1 || kind === 2) && ws.readyState === WebSocket.OPEN) {
          ws.send(Buffer.concat([Buffer.from([kind]), payload]), () => {
            if (ws.bufferedAmount < OUTPUT_IN_FLIGHT) stream.resume();
          });
          if (ws.bufferedAmount >= OUTPUT_IN_FLIGHT) stream.pause();
        }
      }
    });
    stream.on("error", () => {});
    ws.on("message", (data: Buffer) => {
      if (data.length === 0) return;
      const channel = data[0];
      if (channel === 0 && withStdin) {
        stdinBytes += data.length - 1;
        if (cut && stdinBytes > cut.afterBytes) {
          ws.terminate();
          stream.destroy();
          return;
        }
        if (!stream.write(data.subarray(1))) {
          ws.pause();
          stream.once("drain", () => ws.resume());
        }
      } else if (channel === 255 && data[1] === 0 && ws.protocol === "v5.channel.k8s.io") {
        stream.end();
      }
    });
    // Closing the connection ends the command's stdin; the command itself runs on, as in a cluster,
    // its output dropped. The engine's stream must not stay paused for a reader that is gone: the
    // engine then never finishes that exec's exit, and every later exec in the container hangs.
    ws.on("close", () => {
      if (!finished && withStdin) stream.end();
      stream.resume();
    });
    const finish = async () => {
      if (finished) return;
      finished = true;
      clearInterval(poll);
      let status: Json;
      try {
        const state = await exec.inspect();
        const running = record.containerId
          ? (await this.docker.getContainer(record.containerId).inspect()).State.Running
          : false;
        if (!running || state.ExitCode === null || record.deleting) throw new Error("container is not running");
        status =
          state.ExitCode === 0
            ? { metadata: {}, status: "Success" }
            : {
                metadata: {},
                status: "Failure",
                message: `command terminated with non-zero exit code: exit status ${state.ExitCode}`,
                reason: "NonZeroExitCode",
                details: { causes: [{ reason: "ExitCode", message: String(state.ExitCode) }] },
              };
      } catch (error) {
        status = {
          metadata: {},
          status: "Failure",
          message: `error executing command in container: ${(error as Error).message}`,
          reason: "InternalError",
        };
      }
      if (ws.readyState === WebSocket.OPEN) {
        ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(status))]), () => ws.close(1000));
      }
    };
    stream.on("end", () => void finish());
    stream.on("close", () => void finish());
    // Background children may hold the output open after the command
    // exits: then the exec ends once its output has been quiet a moment
    // (never while output is still queued behind a slow reader).
    const poll = setInterval(() => {
      exec.inspect().then(
        (state) => {
          const quiet = !stream.isPaused() && ws.bufferedAmount === 0 && Date.now() - lastOutputAt > 200;
          if (!state.Running && quiet) void finish();
        },
        () => void finish(),
      );
    }, 300);
  }

  // --- answers -------------------------------------------------------------

  private json(res: ServerResponse, code: number, body: Json): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
    res.end(text);
  }

  private status(res: ServerResponse, code: number, reason: string, message: string, details?: Json): void {
    this.json(res, code, statusBody(code, reason, message, details));
  }
}

function statusBody(code: number, reason: string, message: string, details?: Json): Json {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, details, code };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

const UNITS: Record<string, number> = {
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** A memory quantity ("512Mi", "4Gi", "1G") in bytes. */
export function quantityBytes(quantity: string): number {
  const match = /^([0-9.]+)([A-Za-z]*)$/.exec(quantity);
  if (!match) throw new Error(`bad quantity ${quantity}`);
  return Math.round(Number(match[1]) * (UNITS[match[2] as string] ?? 1));
}

/** A CPU quantity ("2", "500m") in cores. */
export function cpuCores(quantity: string): number {
  return quantity.endsWith("m") ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
}
