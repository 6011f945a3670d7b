import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import {
  ComputerContainers,
  type FaultRule,
  FaultRules,
  HttpAnswer,
  LoopbackServers,
  pipeStdout,
  proxyHttp,
  proxyUpgrade,
  readJson,
  refuseUpgrade,
  ServiceRecorder,
  sendJson,
  startFence,
} from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { CREATEOS_OPERATIONS, processConnectFrame } from "./createos-definition.js";
import { checkedEgress, fenceRulesOf, nameserversOf } from "./createos-network-fence.js";
import { type ConnectFrame, ManagedProcesses, type ManagedProcessRecord } from "./createos-processes.js";
import { EmulatedTemplates, type TemplateBuilder } from "./createos-templates.js";
import { EMULATED_SHAPES, refuse, VM_USER, VmMachines, VmRecord } from "./createos-vms.js";

/** Every container the emulator makes carries this label (its value: the emulator's id). */
export const CREATEOS_EMULATOR_LABEL = "agent-computer.test/createos-emulator";

/** A fault: the next `times` calls that match (a path such as `/v1/sandboxes/<id>/pause`) get `status`; with `after`, the work is done and the answer lost. */
export type CreateosFaultRule = Omit<FaultRule, "retryAfter" | "code">;

export interface CreateosEmulatorOptions {
  docker: Docker;
  /** The only key the API takes (`X-Api-Key`). */
  apiKey: string;
  /** The rootfs names and templates the account has, and the image each stands for (the computer image in tests). */
  rootfs: Record<string, string>;
  /** What a template build makes (createos-templates.ts); unset, every build fails. */
  templateBuilder?: TemplateBuilder;
  /** Environment every VM's processes get (the service's own, not the caller's). */
  vmEnv?: Record<string, string>;
  /** Names resolved in every VM and by the service when it puts an allowlist in force, standing in for public DNS (name to IPv4 address). */
  publicHosts?: Record<string, string>;
}

type Json = Record<string, unknown>;

/** The most rows one list page holds (COMPATIBILITY.md: "The server clamps `limit` to 500"). */
const PAGE_LIMIT = 500;
/** How often an idle `/connect` stream says it is alive (types.ts ExecStreamFrame: "Heartbeat marker emitted every 5s"). */
const HEARTBEAT_MS = 5_000;

/**
 * A loopback CreateOS sandbox service for tests (docs/architecture.md
 * §12), held to the operations written from the official SDKs
 * (createos-definition.ts): every request and answer goes through a
 * ServiceRecorder, so a client that leaves the definition shows up as a
 * recorded violation. Sandboxes are real containers of the rootfs image
 * (createos-vms.ts): create answers once the VM runs, pause freezes it
 * with its memory, resume thaws the same one, destroy removes it and
 * keeps the row as `destroyed`. `/exec` runs argv without a shell and
 * drops stdin and env, as the service does; managed processes keep their
 * output for replay (createos-processes.ts). Ports are public through
 * the ingress URL template, without authentication (the SDK's
 * docs/how-to/expose-a-service.md): here `/<id>-<port>/` paths on a
 * second loopback server instead of host names.
 */
export class CreateosEmulator {
  private readonly containers: ComputerContainers;
  readonly id: string;
  /** Every exchange, checked against the definition; a test asserts `recorder.assertNoViolations()`. */
  readonly recorder = new ServiceRecorder("CreateOS", CREATEOS_OPERATIONS);
  private readonly vms = new Map<string, VmRecord>();
  private readonly machines: VmMachines;
  private readonly processes: ManagedProcesses;
  /** The account's templates (`POST /v1/templates`), usable as `rootfs` once ready. */
  readonly templates: EmulatedTemplates;
  private readonly faults = new FaultRules<CreateosFaultRule>();
  private readonly servers = new LoopbackServers();
  private readonly api = this.servers.serve((req, res) => void this.handleApi(req, res));
  private readonly ingress = this.servers.serve(
    (req, res) => this.handleIngress(req, res),
    (req, socket, head) => this.handleIngressUpgrade(req, socket, head),
  );
  /** Every request answered, as `METHOD path` (no query). */
  readonly requests: string[] = [];
  /** How many of the next `/connect` streams are cut after their first data frame (a connection lost mid-stream). */
  private streamCuts = 0;
  /** Every createSandbox body, as it came (a test asserts what the provider asked for). */
  readonly createBodies: unknown[] = [];
  /**
   * How create answers an allowlist: `held` (in force, echoed), `omitted`
   * (in force, left out of the answer, as `omitempty` lets the server:
   * COMPATIBILITY.md), `ignored` (a service that takes the field and holds
   * nothing: no fence, answered and kept empty).
   */
  createEgress: "held" | "omitted" | "ignored" = "held";
  /** What each `/exec` body carried that the service drops (stdin, env): kept to show they had no effect. */
  readonly droppedExecFields: string[] = [];

  constructor(private readonly options: CreateosEmulatorOptions) {
    this.containers = new ComputerContainers(options.docker, CREATEOS_EMULATOR_LABEL);
    this.id = this.containers.instance;
    this.machines = new VmMachines(this.containers, {
      LANG: "C.UTF-8",
      // The screen gateway admits the host's end of the container's network: where the ingress proxy connects from.
      AGENT_COMPUTER_GATEWAY_SOURCES: "default-gateway",
      ...options.vmEnv,
    });
    this.processes = new ManagedProcesses(this.containers, this.servers.sockets);
    this.templates = new EmulatedTemplates(options.templateBuilder, Object.keys(options.rootfs)[0] ?? "");
  }

  /** The base to give the SDK (`baseUrl`). */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.api.port}`;
  }

  async start(): Promise<void> {
    await this.servers.listen();
  }

  /** Removes every container it made, then stops listening. */
  async close(): Promise<void> {
    await Promise.all([...this.vms.values()].map((vm) => vm.transition.catch(() => {})));
    for (const vm of this.vms.values()) this.processes.endAll(vm);
    await this.containers.removeAll();
    await this.servers.close();
  }

  /** The sandbox's status as the service keeps it. */
  statusOf(id: string): string | undefined {
    return this.vms.get(id)?.status;
  }

  containerOf(id: string): string | undefined {
    return this.vms.get(id)?.containerId;
  }

  /** The service fails on purpose: injected answers are JSend `fail`/`error` of the rule's status. */
  inject(rule: CreateosFaultRule): void {
    this.faults.inject(rule);
  }

  get pendingFaults(): number {
    return this.faults.pending;
  }

  /** Sandboxes someone else made (paused, with the service's own names): an account with more than the provider's. */
  addForeignSandboxes(count: number): string[] {
    return Array.from({ length: count }, (_, index) => {
      const vm = new VmRecord(
        `someone-${index}`,
        "s-1vcpu-256mb",
        Object.keys(this.options.rootfs)[0] ?? "",
        false,
        [],
        () => "",
      );
      vm.status = "paused";
      this.vms.set(vm.id, vm);
      return vm.id;
    });
  }

  /** The sandbox's name as the service keeps it. */
  nameOf(id: string): string | undefined {
    return this.vms.get(id)?.name;
  }

  /** The next `count` process output streams are cut after their first data frame, as a dropped connection cuts them. */
  cutNextStreams(count: number): void {
    this.streamCuts += count;
  }

  /** Stream cuts asked for and not yet made. */
  get pendingStreamCuts(): number {
    return this.streamCuts;
  }

  /** Someone destroys the sandbox at the service, behind the provider's back. */
  async destroyBehindTheProvider(id: string): Promise<void> {
    const vm = this.vms.get(id);
    if (!vm) throw new Error(`the emulator has no sandbox ${id}`);
    this.machines.destroy(vm);
    await vm.transition;
    this.processes.endAll(vm);
  }

  // ---- the API -------------------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://createos");
    const method = req.method ?? "GET";
    const path = url.pathname;
    this.requests.push(`${method} ${path}`);
    const raw = method === "PUT" && path.endsWith("/files");
    let body: unknown;
    let bodyError: HttpAnswer | undefined;
    if (!raw && method !== "GET" && method !== "DELETE") {
      body = await readJson(req).catch(() => {
        bodyError = refuse(400, "the body is not JSON");
        return "not json";
      });
    }
    const exchange = this.recorder.request(method, path, { query: url.searchParams, body, headers: req.headers });
    try {
      if (method === "GET" && path === "/healthz") {
        // Unauthenticated liveness (client.js healthz sends no key).
        const envelope = { status: "success", data: { up: true } };
        exchange.answer(200, envelope);
        sendJson(res, 200, envelope);
        return;
      }
      if (req.headers["x-api-key"] !== this.options.apiKey) throw refuse(401, "missing or invalid API key");
      if (bodyError) throw bodyError;
      const fault = this.faults.take(method, path);
      if (fault && !fault.after) throw refuse(fault.status, fault.message ?? "injected fault");
      const answer = await this.route(method, path, url, (body ?? {}) as Json, req, res);
      if (fault?.after && answer !== "streamed") {
        // The work was done; its answer (recorded as it would have gone) is lost on the way.
        exchange.answer(200, { status: "success", data: answer });
        res.destroy();
        return;
      }
      if (answer === "streamed") {
        exchange.answer(200);
        return;
      }
      const envelope = { status: "success", data: answer };
      exchange.answer(200, envelope);
      sendJson(res, 200, envelope);
    } catch (error) {
      const refusal = error instanceof HttpAnswer ? error : refuse(500, (error as Error)?.message ?? "error");
      exchange.answer(refusal.status, refusal.body);
      sendJson(res, refusal.status, refusal.body);
    }
  }

  private async route(
    method: string,
    path: string,
    url: URL,
    body: Json,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<Json | "streamed"> {
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "v1" && parts[1] === "templates") {
      if (parts.length === 2 && method === "GET") return this.templates.list(url.searchParams);
      if (parts.length === 2 && method === "POST") return this.templates.create(body);
      if (parts.length === 3 && method === "GET") return this.templates.get(parts[2] as string, url.searchParams);
    }
    if (parts[0] !== "v1" || parts[1] !== "sandboxes") throw refuse(404, `no route ${method} ${path}`);
    if (parts.length === 2 && method === "POST") return this.create(body);
    if (parts.length === 2 && method === "GET") return this.list(url.searchParams);
    const vm = this.vms.get(parts[2] as string);
    if (!vm) throw refuse(404, "sandbox not found");
    const verb = parts.slice(3).join("/");
    if (verb === "" && method === "GET") return vm.view;
    if (verb === "" && method === "DELETE") return this.destroy(vm);
    if (verb === "" && method === "PATCH") throw refuse(400, "sandbox settings are not emulated");
    if (verb === "egress" && method === "GET") return { id: vm.id, egress: vm.egress };
    if (verb === "egress" && method === "PUT") return this.setEgress(vm, body);
    if (verb === "pause" && method === "POST") return this.pause(vm);
    if (verb === "resume" && method === "POST") return this.resume(vm);
    if (verb === "exec" && method === "POST") return this.exec(vm, body);
    if (verb === "files" && method === "PUT") return this.upload(vm, url.searchParams.get("path") ?? "", req);
    if (verb === "files" && method === "GET") return this.download(vm, url.searchParams.get("path") ?? "", res);
    if (verb === "processes" && method === "POST") return (await this.processes.create(vm, body)).view;
    if (verb === "processes" && method === "GET") {
      vm.running();
      return { processes: [...this.processes.of(vm).values()].map((p) => p.view) };
    }
    if (parts[3] !== "processes" || !parts[4]) throw refuse(404, `no route ${method} ${path}`);
    vm.running();
    const process = this.processes.of(vm).get(parts[4]);
    if (!process) throw refuse(404, "process not found");
    const action = parts.slice(5).join("/");
    if (action === "" && method === "GET") return process.view;
    if (action === "" && method === "DELETE") {
      return this.processes.remove(vm, process, Number(url.searchParams.get("grace_ms") ?? 2_000));
    }
    if (action === "connect" && method === "GET") {
      this.connect(process, Number(url.searchParams.get("after") ?? 0), res);
      return "streamed";
    }
    if (action === "input" && method === "POST") return this.processes.input(process, body);
    if (action === "stdin/close" && method === "POST") return this.processes.closeStdin(process);
    if (action === "signal" && method === "POST") return this.processes.signal(vm, process, body.signal as string);
    if (action === "wait" && method === "GET") {
      return this.processes.wait(process, Number(url.searchParams.get("timeout_ms") ?? 30_000));
    }
    throw refuse(404, `no route ${method} ${path}`);
  }

  /** createSandbox: synchronous, answers once the VM runs; names unique per user among live sandboxes. */
  private async create(body: Json): Promise<Json> {
    this.createBodies.push(structuredClone(body));
    const shape = body.shape as string;
    if (!EMULATED_SHAPES[shape]) throw refuse(400, `unknown shape ${shape}`);
    const rootfs = (body.rootfs as string | undefined) ?? Object.keys(this.options.rootfs)[0] ?? "";
    const image = this.options.rootfs[rootfs] ?? this.templates.imageOf(rootfs);
    if (!image) throw refuse(400, `unknown rootfs or template ${rootfs}`);
    const name = (body.name as string | undefined) || `sandbox-${Date.now().toString(36)}`;
    const live = (vm: VmRecord) => vm.status !== "destroyed" && vm.status !== "destroying";
    if ([...this.vms.values()].some((vm) => vm.name === name && live(vm))) {
      throw refuse(409, `a sandbox named ${name} exists`);
    }
    const envs = (body.envs as Record<string, string> | undefined) ?? {};
    const egress = checkedEgress(body.egress as string[] | undefined);
    const vm = new VmRecord(
      name,
      shape,
      rootfs,
      body.ingress_enabled === true,
      Object.keys(envs),
      (id) => `http://127.0.0.1:${this.ingress.port}/${id}-<port>/`,
    );
    this.vms.set(vm.id, vm);
    const hosts = Object.entries(this.options.publicHosts ?? {}).map(([host, address]) => `${host}:${address}`);
    await this.machines.boot(vm, image, envs, hosts);
    try {
      // Before create answers: nothing in the VM sees the network unfenced once the caller has it.
      if (this.createEgress !== "ignored") await this.fence(vm, egress);
    } catch (error) {
      this.machines.destroy(vm);
      throw refuse(500, `the sandbox's egress could not be put in force: ${(error as Error).message}`);
    }
    const { egress: held, ...created } = vm.created;
    return this.createEgress === "omitted" ? created : { ...created, egress: held };
  }

  /** setEgress: the list replaced at once, its rules in force before the answer (REST page: "take effect immediately"). */
  private async setEgress(vm: VmRecord, body: Json): Promise<Json> {
    if (!vm.containerId) throw refuse(409, `sandbox is ${vm.status}`);
    await this.fence(vm, checkedEgress(body.egress as string[] | null | undefined));
    return { id: vm.id, egress: vm.egress };
  }

  /** Puts `egress` in force on the VM: its old fence gone, a new one when the list has rules (createos-network-fence.ts). */
  private async fence(vm: VmRecord, egress: string[]): Promise<void> {
    const container = vm.containerId as string;
    const resolvConf = (await this.containers.run(container, ["cat", "/etc/resolv.conf"], { user: VM_USER })).stdout;
    const fenced = await fenceRulesOf(egress, this.options.publicHosts ?? {}, nameserversOf(resolvConf.toString()));
    // A fenced VM opened again: the old fence's rules stay in its namespace until a fence replaces them,
    // so a fence that lets everything through takes its place (as the service's "no chain" does).
    const open = { alwaysDenied: [], allowedCidrs: [], deniedCidrs: [], allowedDomains: [] };
    const rules = fenced ?? (vm.fenceId ? open : undefined);
    if (vm.fenceId) await this.containers.remove(vm.fenceId);
    vm.fenceId = undefined;
    vm.egress = egress;
    if (!rules) return;
    vm.fenceId = await startFence(
      this.options.docker,
      container,
      rules,
      { publicStandIns: [], hosts: this.options.publicHosts ?? {} },
      { [CREATEOS_EMULATOR_LABEL]: this.containers.instance },
    );
  }

  /** listSandboxes: every row, destroyed ones too, oldest first, paged by `limit`/`offset`. */
  private list(query: URLSearchParams): Json {
    const status = query.get("status");
    const all = [...this.vms.values()].filter((vm) => !status || vm.status === status);
    const limit = Math.min(PAGE_LIMIT, Number(query.get("limit") ?? 50) || 50);
    const offset = Number(query.get("offset") ?? 0) || 0;
    const page = all.slice(offset, offset + limit);
    return { data: page.map((vm) => vm.view), pagination: { total: all.length, limit, offset, count: page.length } };
  }

  /** destroySandbox: `destroying` now, `destroyed` once the VM is reclaimed; again on a destroyed row is a no-op (types.ts DestroyedResponse). */
  private destroy(vm: VmRecord): Json {
    if (vm.status !== "destroyed" && vm.status !== "destroying") {
      if (vm.fenceId) void this.containers.remove(vm.fenceId);
      vm.fenceId = undefined;
      this.machines.destroy(vm);
      void vm.transition.then(() => this.processes.endAll(vm));
    }
    return { id: vm.id, status: vm.status === "destroyed" ? "destroyed" : "destroying" };
  }

  /** pauseSandbox: only a running VM pauses (docs/explanation/lifecycle.md); answers the view, `pausing`. */
  private async pause(vm: VmRecord): Promise<Json> {
    if (vm.status === "paused" || vm.status === "pausing") return vm.view;
    if (vm.status !== "running") throw refuse(409, `sandbox is ${vm.status}; only a running sandbox pauses`);
    this.machines.pause(vm);
    return vm.view;
  }

  /** resumeSandbox: a paused VM resumes with the same id and memory; answers the view, `resuming`. */
  private async resume(vm: VmRecord): Promise<Json> {
    if (vm.status === "pausing") await vm.transition;
    if (vm.status === "running" || vm.status === "resuming") return vm.view;
    if (vm.status !== "paused") throw refuse(409, `sandbox is ${vm.status}; only a paused sandbox resumes`);
    this.machines.resume(vm);
    return vm.view;
  }

  /** exec: argv without a shell, buffered; stdin and env dropped (types.ts ExecRequest's comment). */
  private async exec(vm: VmRecord, body: Json): Promise<Json> {
    const container = vm.running();
    if (body.stream === true) throw refuse(400, "streamed exec is not emulated");
    for (const field of ["stdin", "env"]) if (body[field] !== undefined) this.droppedExecFields.push(field);
    const started = performance.now();
    const done = await this.containers.run(container, [body.cmd as string, ...((body.args as string[]) ?? [])], {
      user: VM_USER,
    });
    return {
      result: { stdout: done.stdout.toString("utf8"), stderr: done.stderr.toString("utf8"), exit_code: done.exitCode },
      exec_ms: performance.now() - started,
    };
  }

  /** uploadFile: the raw body written whole at the path (as root, the VM's agent's user). */
  private async upload(vm: VmRecord, path: string, req: IncomingMessage): Promise<Json> {
    const container = vm.running();
    const done = await this.containers.run(container, ["sh", "-c", 'cat > "$1"', "upload", path], {
      user: VM_USER,
      input: req,
    });
    if (done.exitCode !== 0) throw refuse(400, `cannot write ${path}: ${done.stderr.toString("utf8").trim()}`);
    return { ok: true };
  }

  /** downloadFile: the file's bytes as they are read; a missing one is 404 (sandbox.js download's `@throws`). */
  private async download(vm: VmRecord, path: string, res: ServerResponse): Promise<"streamed"> {
    const container = vm.running();
    const found = await this.containers.run(container, ["sh", "-c", '[ -f "$1" ] && [ -r "$1" ]', "check", path], {
      user: VM_USER,
    });
    if (found.exitCode !== 0) throw refuse(404, `no file ${path}`);
    res.writeHead(200, { "content-type": "application/octet-stream" });
    await pipeStdout(this.containers, container, ["cat", "--", path], { user: VM_USER }, res);
    res.end();
    return "streamed";
  }

  /** connectProcess: NDJSON frames after `after`, then live; the exit frame ends the stream; each frame checked. */
  private connect(process: ManagedProcessRecord, after: number, res: ServerResponse): void {
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    let cut = this.streamCuts > 0;
    if (cut) this.streamCuts -= 1;
    const send = (frame: ConnectFrame) => {
      if (res.destroyed) return;
      const checked = processConnectFrame.safeParse(frame);
      if (!checked.success) {
        this.recorder.violations.push({
          call: `GET /connect of ${process.id}`,
          operation: "connectProcess",
          where: "response",
          message: checked.error.message.slice(0, 300),
        });
      }
      res.write(`${JSON.stringify(frame)}\n`);
      if (cut && frame.type === "data") {
        cut = false;
        res.destroy();
      }
    };
    for (const frame of process.framesAfter(after)) send(frame);
    if (res.destroyed) return;
    if (process.state !== "running") {
      res.end();
      return;
    }
    const heartbeat = setInterval(() => send({ type: "heartbeat" }), HEARTBEAT_MS);
    const listener = (frame: ConnectFrame | "end") => {
      if (frame !== "end") send(frame);
      else {
        clearInterval(heartbeat);
        res.end();
      }
    };
    process.listeners.add(listener);
    res.once("close", () => {
      clearInterval(heartbeat);
      process.listeners.delete(listener);
    });
  }

  // ---- ingress ---------------------------------------------------------------

  /** The VM's address for an ingress path: public, no token (docs/how-to/expose-a-service.md). */
  private ingressTarget(req: IncomingMessage): { host: string; port: number; path: string } | HttpAnswer {
    const url = new URL(req.url ?? "/", "http://ingress");
    const match = /^\/(sb_[0-9a-f]+)-(\d+)(\/.*)?$/.exec(url.pathname);
    const vm = match ? this.vms.get(match[1] as string) : undefined;
    if (!match || !vm?.ingressEnabled) return new HttpAnswer(404, "no such ingress");
    if (vm.status !== "running" || !vm.ip) return new HttpAnswer(502, `sandbox is ${vm.status}`);
    return { host: vm.ip, port: Number(match[2]), path: `${match[3] ?? "/"}${url.search}` };
  }

  private handleIngress(req: IncomingMessage, res: ServerResponse): void {
    const target = this.ingressTarget(req);
    if (!(target instanceof HttpAnswer)) proxyHttp(req, res, target);
    else res.writeHead(target.status, { "content-type": "text/plain" }).end(target.message);
  }

  private handleIngressUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const target = this.ingressTarget(req);
    if (target instanceof HttpAnswer) refuseUpgrade(socket, target.status);
    else proxyUpgrade(req, socket, head, target, this.servers.sockets);
  }
}
