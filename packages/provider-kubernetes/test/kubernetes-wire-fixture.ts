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
 *                                                  containers stop with that grace, then the pod goes
 * - GET    /api/v1/namespaces/{ns}/pods/{name}/exec?command=..&container=..&stdin=..&stdout=..&stderr=..
 *          websocket upgrade with subprotocol v5.channel.k8s.io (unless turned off) or
 *          v4.channel.k8s.io; binary frames whose first byte is the channel: 0 stdin, 1 stdout,
 *          2 stderr, 3 status (a Status: Success, or NonZeroExitCode with details.causes
 *          [{reason: ExitCode}], or InternalError when the container went away), 4 resize (ignored),
 *          255 close (v5: [255, 0] ends stdin). Refused upgrades answer a Status with 404/403/400.
 * - POST /api/v1/namespaces/{ns}/secrets, GET and DELETE .../secrets/{name}: 201 / 200 Secret, 404, 409,
 *   422 and 400 as kube-apiserver answers (fixture-secrets.ts); a Secret whose owner pods are all gone
 *   is deleted, as the garbage collector does; secret volumes are written as the kubelet does.
 * - GET /api, /apis, /api/v1, /version: discovery as kubectl reads it (core/v1 pods and pods/exec).
 * - Every request needs `Authorization: Bearer <token>` (401 otherwise); `forbid()` makes a verb
 *   (of pods, or of secrets) answer 403 Forbidden as RBAC would; `failNext()` answers the next call of a verb with a status
 *   (such as 409); `cutNextExec()` drops the next exec connection after some stdin bytes.
 * - GET /api/v1/namespaces/{ns}/pods/{name}/log?container=..&follow=..&sinceTime=..  200 text/plain
 *   (fixture-pod-log.ts), followed until the container is gone; 400 for a container not there.
 * Pod specs: what kube-apiserver refuses of the fields honoured is 422 Invalid (fixture-pod-spec-check.ts,
 * citing the OpenAPI definitions). Per container (fixture-pod-containers.ts): image, command, args, env,
 * workingDir, resources.limits (cpu, memory), readinessProbe.exec (Ready once every container's passes),
 * securityContext runAsUser/runAsGroup, runAsNonRoot (uid 0: CreateContainerConfigError), privileged,
 * allowPrivilegeEscalation false (no-new-privileges), capabilities drop ALL and add, readOnlyRootFilesystem,
 * memory emptyDirs (/dev/shm: the shm size; elsewhere a tmpfs), shareProcessNamespace (an init reaping
 * orphans, one pid namespace), terminationGracePeriodSeconds. Containers after the first join its network
 * and IPC namespaces; with initContainers (run in order to completion, one failing fails the pod) all join a
 * sandbox (fixture-pod-init.ts). Exec runs in the `container=` named (400 in a pod of several without one).
 * Volumes: a claim made with `addClaim(namespace, name, hostDir)` (a PVC backed by a host folder)
 * is bind-mounted at each mount's mountPath, `subPath` made on first use owned by the fsGroup; an
 * emptyDir on disk is a folder per pod every container mounting it shares; a missing claim leaves
 * the pod Pending (PodScheduled False, `persistentvolumeclaim "x" not found`).
 * Scheduling, on one node: a required podAffinity term (matchLabels, namespaces) must match a
 * running pod, a computer pod or one made with `addForeignPod` (the pods that hold a volume);
 * otherwise the pod stays Pending with PodScheduled False, reason Unschedulable and the
 * scheduler's message, as the real API shows it.
 * Not implemented: watch, patch, other resources, protobuf, tty exec, preferred affinity, image
 * pulls (an image missing on the engine stays ErrImagePull, so the pod never becomes Ready).
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import type { KubeConfig } from "@kubernetes/client-node";
import type Docker from "dockerode";
import { WebSocketServer } from "ws";
import { apiDiscovery } from "./fixture-discovery.js";
import { pipeExec } from "./fixture-exec-stream.js";
import { type Json, readBody, statusBody } from "./fixture-json.js";
import { fixtureKubeConfig } from "./fixture-kube-config.js";
import {
  createPodContainer,
  execContainerIndex,
  execExitCode,
  FIXTURE_LABEL,
  volumeBinds,
} from "./fixture-pod-containers.js";
import { initializePod } from "./fixture-pod-init.js";
import { podList } from "./fixture-pod-list.js";
import { servePodLog } from "./fixture-pod-log.js";
import { nonRootViolation, podSpecProblem } from "./fixture-pod-spec-check.js";
import { foreignPod, unschedulableReason } from "./fixture-scheduling.js";
import { FixtureSecrets } from "./fixture-secrets.js";

export type { Json } from "./fixture-json.js";
export { cpuCores, quantityBytes } from "./fixture-pod-containers.js";
/** A verb the provider uses, as RBAC names it (exec is `create pods/exec`). */
export type FixtureVerb = "create" | "get" | "list" | "delete" | "exec" | "log";
/** The resources a verb acts on here. */
type FixtureResource = "pods" | "secrets";

interface PodRecord {
  pod: Json;
  /** The engine container of each of the pod's containers, in the spec's order, once made. */
  containerIds: string[];
  /** Its sandbox and init containers (fixture-pod-init.ts), when it has init containers. */
  initIds: string[];
  deleting?: boolean;
}

export class KubernetesWireFixture {
  /** Offer v5.channel.k8s.io; false makes exec fall back to v4 as an older cluster would. */
  offerV5 = true;
  readonly token = `fixture-token-${randomUUID()}`;
  private readonly id = randomUUID().slice(0, 8);
  private readonly pods = new Map<string, PodRecord>();
  private readonly forbidden = new Set<string>();
  private readonly failures = new Map<FixtureVerb, number>();
  private cut: { afterBytes: number } | undefined;
  private readonly claims = new Map<string, string>();
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private resourceVersion = 1000;
  /** The namespaces' Secrets (fixture-secrets.ts). */
  readonly secrets = new FixtureSecrets(
    () => String(++this.resourceVersion),
    (namespace, uid) =>
      [...this.pods.entries()].some(([key, r]) => key.startsWith(`${namespace}/`) && r.pod.metadata.uid === uid),
  );
  /** Where pods' emptyDir volumes on disk live, a folder per pod (fixture-pod-containers.ts). */
  private readonly emptyDirs = mkdtempSync(join(tmpdir(), "k8s-fixture-"));
  private port = 0;
  /** Exec subprotocols chosen, in order (tests check v5 and v4 both happened). */
  readonly protocolsUsed: string[] = [];
  /** Every exec started, in order: the pod, the container's name and the command. */
  readonly execsStarted: { pod: string; container: string; command: string[] }[] = [];

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

  /** Makes `verb` of `resource` answer 403 Forbidden until `allow`. */
  forbid(verb: FixtureVerb, resource: FixtureResource = "pods"): void {
    this.forbidden.add(resource === "pods" ? verb : `${resource} ${verb}`);
  }
  allow(verb: FixtureVerb, resource: FixtureResource = "pods"): void {
    this.forbidden.delete(resource === "pods" ? verb : `${resource} ${verb}`);
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
    const pod = foreignPod(namespace, name, labels, String(++this.resourceVersion));
    this.pods.set(`${namespace}/${name}`, { containerIds: [], initIds: [], pod });
  }

  /** The pod as the API would show it, or undefined. */
  podJson(namespace: string, name: string): Json | undefined {
    return this.pods.get(`${namespace}/${name}`)?.pod;
  }

  /** The engine container behind a pod's container `container` (by name; the first by default). */
  containerOf(namespace: string, name: string, container?: string): string | undefined {
    const record = this.pods.get(`${namespace}/${name}`);
    if (!record) return undefined;
    const index =
      container === undefined
        ? 0
        : ((record.pod.spec?.containers ?? []) as Json[]).findIndex((c) => c.name === container);
    return index < 0 ? undefined : record.containerIds[index];
  }

  /** The engine container that holds a pod's network namespace: its sandbox, else its first container. */
  networkHolderOf(namespace: string, name: string): string | undefined {
    const record = this.pods.get(`${namespace}/${name}`);
    return record?.initIds[0] ?? record?.containerIds[0];
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
    // Containers that joined another's namespaces go first (the engine may refuse the first while they run).
    for (const joined of [true, false]) {
      const left = await this.docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${FIXTURE_LABEL}=${this.id}`] }),
      });
      const now = left.filter((c) => joined === (c.HostConfig?.NetworkMode ?? "").startsWith("container:"));
      await Promise.all(
        now.map((c) =>
          this.docker
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => {}),
        ),
      );
    }
    rmSync(this.emptyDirs, { recursive: true, force: true });
  }

  // --- REST ---------------------------------------------------------------

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.authorized(req)) return this.status(res, 401, "Unauthorized", "Unauthorized");
    const url = new URL(req.url ?? "/", "http://fixture");
    const discovery = req.method === "GET" ? apiDiscovery(url.pathname, this.port) : undefined;
    if (discovery) return this.json(res, 200, discovery);
    const log = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/.exec(url.pathname);
    if (log && req.method === "GET") return this.log(res, log, url.searchParams);
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|secrets)(?:\/([^/]+))?$/.exec(url.pathname);
    if (!match) return this.status(res, 404, "NotFound", "the server could not find the requested resource");
    const namespace = decodeURIComponent(match[1] as string);
    const resource = match[2] as FixtureResource;
    const name = match[3] === undefined ? undefined : decodeURIComponent(match[3]);
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
    if (!verb || (resource === "secrets" && verb === "list"))
      return this.status(res, 405, "MethodNotAllowed", `${req.method} is not supported here`);
    if (this.refused(res, verb, namespace, resource)) return;
    if (!this.namespaces.includes(namespace)) {
      return this.status(res, 404, "NotFound", `namespaces "${namespace}" not found`, {
        name: namespace,
        kind: "namespaces",
      });
    }
    if (resource === "secrets") {
      const answer = name
        ? this.secrets.readOrDelete(req.method as "GET" | "DELETE", namespace, name)
        : await this.secrets.create(req, namespace);
      return this.json(res, answer.code, answer.body);
    }
    if (verb === "create") return this.create(req, res, namespace);
    if (verb === "list")
      return this.json(
        res,
        200,
        podList(this.pods, namespace, url.searchParams.get("labelSelector"), this.resourceVersion),
      );
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

  private authorized(req: IncomingMessage): boolean {
    return req.headers.authorization === `Bearer ${this.token}`;
  }

  /** RBAC and one-shot failures; true when the answer was sent. */
  private refused(res: ServerResponse, verb: FixtureVerb, namespace: string, of: FixtureResource = "pods"): boolean {
    const resource =
      of === "secrets" ? "secrets" : verb === "exec" ? "pods/exec" : verb === "log" ? "pods/log" : "pods";
    const rbacVerb = verb === "exec" ? "create" : verb === "log" ? "get" : verb;
    if (this.forbidden.has(of === "pods" ? verb : `${of} ${verb}`)) {
      this.status(
        res,
        403,
        "Forbidden",
        `${resource} is forbidden: User "system:serviceaccount:agent-computer:worker" cannot ${rbacVerb} resource "${resource}" in API group "" in the namespace "${namespace}"`,
        { kind: resource },
      );
      return true;
    }
    const code = of === "pods" ? this.failures.get(verb) : undefined;
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
    const problem = podSpecProblem(body.spec ?? {});
    if (problem) return this.status(res, 422, "Invalid", `Pod "${name}" is invalid: ${problem}`, { name, kind: "Pod" });
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
        containerStatuses: ((body.spec?.containers ?? []) as Json[]).map((c) => ({
          name: c.name,
          image: c.image,
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: "ContainerCreating" } },
        })),
      },
    };
    const record: PodRecord = { pod, containerIds: [], initIds: [] };
    this.pods.set(key, record);
    void this.run(key, record).catch(() => {});
    this.json(res, 201, pod);
  }

  // --- pods backed by containers -----------------------------------------

  /**
   * Starts the pod's containers in order, as the kubelet does
   * (fixture-pod-containers.ts), then runs their readiness probes: the pod
   * is Ready once every container is.
   */
  private async run(key: string, record: PodRecord): Promise<void> {
    const pod = record.pod;
    const spec = pod.spec as Json;
    const containers = spec.containers as Json[];
    const statusOf = (i: number) => pod.status.containerStatuses[i] as Json;
    const [namespace, name] = key.split("/") as [string, string];
    const unschedulable = unschedulableReason(this.claims, this.pods, namespace, spec);
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
    for (const container of [...((spec.initContainers ?? []) as Json[]), ...containers]) {
      const i = containers.indexOf(container);
      const exists = await this.docker
        .getImage(container.image)
        .inspect()
        .then(
          () => true,
          () => false,
        );
      if (!exists) {
        (statusOf(Math.max(0, i)) as Json).state = {
          waiting: { reason: "ErrImagePull", message: `image "${container.image}" not found on the node` },
        };
        return;
      }
    }
    const podDir = join(this.emptyDirs, key.replace("/", "_"));
    // The kubelet mounts every volume before any container starts, waiting for a missing Secret.
    if (!(await this.secrets.materialize(podDir, namespace, spec, () => !record.deleting))) return;
    const bindsOf = (container: Json) => volumeBinds(this.claims, podDir, namespace, spec, container);
    const base = { fixtureId: this.id, namespace, pod: name, spec };
    const init = await initializePod(this.docker, base, pod, bindsOf, () => !record.deleting);
    record.initIds.push(...init.made);
    if (init.failed) return;
    if (init.podIP) pod.status.podIP = init.podIP;
    for (const [i, container] of containers.entries()) {
      const refused = nonRootViolation(name, spec, container);
      if (refused) {
        statusOf(i).state = { waiting: { reason: "CreateContainerConfigError", message: refused } };
        return;
      }
      const created = await createPodContainer(this.docker, {
        ...base,
        container,
        binds: bindsOf(container),
        first: init.sandbox ?? record.containerIds[0],
        shared: containers.length > 1,
      });
      record.containerIds.push(created.id);
      if (record.deleting) {
        await created.remove({ force: true }).catch(() => {});
        return;
      }
      await created.start();
      const started = new Date().toISOString();
      if (i === 0 && !init.sandbox) {
        const info = await created.inspect();
        pod.status.podIP = Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress || undefined;
        pod.status.startTime = started;
      }
      statusOf(i).state = { running: { startedAt: started } };
      statusOf(i).containerID = `docker://${created.id}`;
    }
    pod.status.phase = "Running";
    await Promise.all(containers.map((container, i) => this.probeUntilReady(key, record, container, i)));
    if (record.deleting || !this.pods.has(key)) return;
    pod.status.conditions.push(
      { type: "Ready", status: "True", lastTransitionTime: new Date().toISOString() },
      { type: "ContainersReady", status: "True", lastTransitionTime: new Date().toISOString() },
    );
  }

  /** Runs one container's readiness probe until it passes (at once without one); its status says ready then. */
  private async probeUntilReady(key: string, record: PodRecord, container: Json, index: number): Promise<void> {
    const probe = container.readinessProbe?.exec?.command as string[] | undefined;
    for (;;) {
      if (record.deleting || !this.pods.has(key)) return;
      const id = record.containerIds[index] as string;
      if (probe === undefined || (await execExitCode(this.docker, id, probe)) === 0) {
        record.pod.status.containerStatuses[index].ready = true;
        return;
      }
      await new Promise((r) => setTimeout(r, (container.readinessProbe?.periodSeconds ?? 10) * 1000));
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
      // Later containers first: they live in the first one's namespaces.
      const containers = [...record.initIds, ...record.containerIds]
        .reverse()
        .map((id) => this.docker.getContainer(id));
      if (grace > 0) await Promise.all(containers.map((c) => c.stop({ t: grace }).catch(() => {})));
      for (const container of containers) await container.remove({ force: true }).catch(() => {});
      rmSync(join(this.emptyDirs, key.replace("/", "_")), { recursive: true, force: true });
      this.pods.delete(key);
      this.secrets.collectOwnedBy(key.split("/")[0] as string, record.pod.metadata.uid);
    };
    if (grace === 0 || direct) await finish();
    else void finish();
  }

  /** `GET .../pods/{name}/log` (fixture-pod-log.ts). */
  private async log(res: ServerResponse, match: RegExpExecArray, query: URLSearchParams): Promise<void> {
    const [namespace, name] = [decodeURIComponent(match[1] as string), decodeURIComponent(match[2] as string)];
    if (this.refused(res, "log", namespace)) return;
    const record = this.pods.get(`${namespace}/${name}`);
    if (!record) return this.status(res, 404, "NotFound", `pods "${name}" not found`, { name, kind: "pods" });
    const index = execContainerIndex(record.pod.spec, name, query.get("container"));
    if (typeof index === "string") return this.status(res, 400, "BadRequest", index);
    const id = record.containerIds[index];
    const wanted = record.pod.spec.containers[index].name;
    if (!id) return this.status(res, 400, "BadRequest", `container "${wanted}" in pod "${name}" is waiting to start`);
    await servePodLog(this.docker, res, id, query);
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
    if (record.containerIds.length === 0 || record.pod.status.phase !== "Running") {
      return refuse(400, "BadRequest", `pod ${name} is not running (phase ${record.pod.status.phase})`);
    }
    const index = execContainerIndex(record.pod.spec, name, url.searchParams.get("container"));
    if (typeof index === "string") return refuse(400, "BadRequest", index);
    const containerId = record.containerIds[index] as string;

    const command = url.searchParams.getAll("command");
    this.execsStarted.push({ pod: name, container: record.pod.spec.containers[index].name, command });
    const withStdin = url.searchParams.get("stdin") === "true";
    const container = this.docker.getContainer(containerId);
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
      pipeExec(this.docker, ws, stream, exec, { containerId, gone: () => record.deleting === true }, withStdin, cut);
    });
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
