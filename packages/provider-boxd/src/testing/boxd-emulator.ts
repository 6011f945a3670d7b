import { createHmac, randomBytes } from "node:crypto";
import {
  ComputerContainers,
  type Exchange,
  forwardPort,
  LoopbackServers,
  readJson,
  ServiceRecorder,
  sendJson,
} from "@agent-computer/testing/emulator";
import * as grpc from "@grpc/grpc-js";
import type Docker from "dockerode";
import { BOXD_METHODS, type BoxdMessage, type BoxdMethod, decodeMessage, encodeMessage } from "../boxd-definition.js";
import { BOXD_OPERATIONS, undeclaredFields } from "./boxd-definition.js";
import { GrpcRefusal, runExec, runUpload, type StreamHost, serviceErrorOf } from "./boxd-exec-session.js";
import { BoxdSnapshots } from "./boxd-snapshots.js";
import { BoxdVms, type VmRecord } from "./boxd-vms.js";

export interface BoxdEmulatorOptions {
  docker: Docker;
  /** The image a machine created without `image_ref` runs (the computer image in tests). */
  baseImage: string;
  /** API keys and the organisation each is bound to (docs.boxd.sh: "keys are bound to one organisation"). */
  apiKeys: Record<string, string>;
  /** How long an issued JWT lives (docs.boxd.sh: about an hour); tests shorten it to see a refresh. */
  tokenLifetimeSeconds?: number;
}

/** The port a machine's default public URL reaches (docs.boxd.sh control-plane, "Managing proxies"). */
const PUBLIC_PORT = 8000;

/** DNS label: a machine's name is the first label of its public host (`<name>.boxd.sh`). */
const NAME_FORM = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * boxd's public API on loopback: the key exchange (`POST
 * /api/v1/auth/token`, HTTP) and `boxd.api.v1.BoxdApi` (gRPC, cleartext
 * HTTP/2, as docs.boxd.sh documents port 9443) built from this package's
 * proto, whose machines are containers of the computer image. Every call
 * is checked against the definition (BOXD_OPERATIONS, and the wire bytes
 * for undeclared fields) and recorded; tests assert zero violations.
 */
export class BoxdEmulator {
  readonly recorder = new ServiceRecorder("boxd", BOXD_OPERATIONS);
  /** Tokens issued: token to organisation and expiry (epoch ms). */
  private readonly tokens = new Map<string, { org: string; expiresAt: number }>();
  private readonly secret = randomBytes(32);
  private readonly servers = new LoopbackServers();
  private readonly http = this.servers.serve((req, res) => void this.onHttp(req, res));
  private readonly grpcServer = new grpc.Server();
  private readonly containers: ComputerContainers;
  readonly vms: BoxdVms;
  readonly snapshots: BoxdSnapshots;
  /** Exec calls under way, so a destroy or close ends them. */
  private readonly execs = new Set<() => void>();
  private grpcPort = 0;
  /** How many coming Exec calls are left silent (see `silenceExecs`). */
  private silentExecs = 0;
  /** Injected failures by rpc: answered with `code`, before the work or (`after`) once it is done. */
  private readonly faults = new Map<
    string,
    { code: grpc.status; times: number; after: boolean; message: string | undefined }[]
  >();
  /** Each machine's public URL: a loopback listener standing for `https://<name>.boxd.sh`. */
  private readonly publicUrls = new Map<string, { url: string; close: () => void }>();

  constructor(private readonly options: BoxdEmulatorOptions) {
    this.containers = new ComputerContainers(options.docker, "agent-computer.test/boxd-emulator");
    this.vms = new BoxdVms(this.containers);
    this.snapshots = new BoxdSnapshots(this.containers);
  }

  /** The gRPC endpoint, cleartext (`apiUrl` of the provider). */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.grpcPort}`;
  }

  /** The key exchange (`tokenUrl` of the provider). */
  get tokenUrl(): string {
    return `http://127.0.0.1:${this.http.port}/api/v1/auth/token`;
  }

  async start(): Promise<void> {
    this.grpcServer.addService(this.serviceDefinition(), this.handlers());
    await this.servers.listen();
    this.grpcPort = await new Promise<number>((resolve, reject) =>
      this.grpcServer.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) =>
        error ? reject(error) : resolve(port),
      ),
    );
  }

  /**
   * The next `times` calls of `rpc` fail with `code` (UNAVAILABLE by
   * default): before the work, or with `after` once the work is done (the
   * answer lost on the way).
   */
  fail(rpc: string, options: { code?: grpc.status; times?: number; after?: boolean; message?: string } = {}): void {
    const rules = this.faults.get(rpc) ?? [];
    rules.push({
      code: options.code ?? grpc.status.UNAVAILABLE,
      times: options.times ?? 1,
      after: options.after ?? false,
      message: options.message,
    });
    this.faults.set(rpc, rules);
  }

  /**
   * The next `times` Exec calls (all until `answerExecs`, by default) are
   * left open and silent: no output, no exit code, no error, the command
   * never run, as a service that stopped answering.
   */
  silenceExecs(times = Number.POSITIVE_INFINITY): void {
    this.silentExecs = times;
  }

  /** Exec calls are answered again (the silent ones already open stay silent). */
  answerExecs(): void {
    this.silentExecs = 0;
  }

  private takeFault(rpc: string, after: boolean): void {
    const rule = this.faults.get(rpc)?.find((r) => r.times > 0 && r.after === after);
    if (!rule) return;
    rule.times--;
    throw new GrpcRefusal(rule.code, rule.message ?? `injected ${grpc.status[rule.code]}`);
  }

  /**
   * The machine's public URL as the emulator serves it: every request is
   * forwarded to the machine's port 8000, public, with no authentication of
   * the service's own (docs.boxd.sh control-plane, "Managing proxies").
   * The provider's `publicUrl` option points here.
   */
  publicUrlOf(name: string): string {
    const served = this.publicUrls.get(name);
    if (!served) throw new Error(`no machine ${name} has a public URL here`);
    return served.url;
  }

  /**
   * HTTP requests and websocket upgrades alike go to the machine's port 8000
   * while it runs (a suspended machine's proxy answers 502): the service
   * adds no authentication, so whatever listens on 8000 decides who is let in.
   */
  private async servePublicUrl(vm: VmRecord): Promise<void> {
    // A getter: a cold start (StartVm) gives the container a new address.
    const target = {
      get host() {
        return vm.ip;
      },
      port: PUBLIC_PORT,
    };
    const reachable = () => this.vms.find(vm.org, vm.name)?.status === "running";
    this.publicUrls.set(vm.name, await forwardPort(target, reachable));
  }

  private closePublicUrl(name: string): void {
    this.publicUrls.get(name)?.close();
    this.publicUrls.delete(name);
  }

  /** Destroys a machine as someone else would (the console, another client): the provider is not told. */
  async destroyBehindTheProvider(org: string, name: string): Promise<void> {
    const vm = this.vms.find(org, name);
    if (!vm) throw new Error(`no machine ${name} in ${org}`);
    this.closePublicUrl(vm.name);
    await this.vms.destroy(vm);
  }

  /**
   * Removes a machine's container while the service still lists it running:
   * what a request sees while a destroy is under way ("Removal In
   * Progress") or after the machine's host died.
   */
  async loseContainer(org: string, name: string): Promise<void> {
    const vm = this.vms.find(org, name);
    if (!vm) throw new Error(`no machine ${name} in ${org}`);
    await this.options.docker.getContainer(vm.containerId).remove({ force: true });
  }

  async close(): Promise<void> {
    for (const name of [...this.publicUrls.keys()]) this.closePublicUrl(name);
    for (const end of this.execs) end();
    this.grpcServer.forceShutdown();
    await this.servers.close();
    await this.snapshots.settle();
    await this.vms.removeAll();
  }

  // --- the key exchange (docs.boxd.sh reference/grpc-api, "Exchange for a JWT") ---

  private async onHttp(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) {
    if (req.method !== "POST" || req.url !== "/api/v1/auth/token") return sendJson(res, 404, { error: "not found" });
    const body = (await readJson(req).catch(() => undefined)) as { api_key?: unknown } | undefined;
    const org = typeof body?.api_key === "string" ? this.options.apiKeys[body.api_key] : undefined;
    if (!org) return sendJson(res, 401, { error: "invalid api key" });
    const lifetime = this.options.tokenLifetimeSeconds ?? 3600;
    const expiresAt = Math.floor(Date.now() / 1000) + lifetime;
    const token = this.jwtOf(org, expiresAt);
    this.tokens.set(token, { org, expiresAt: expiresAt * 1000 });
    sendJson(res, 200, { token, expires_at: expiresAt, user_id: `usr_${org}` });
  }

  /** A JWT's form (header.payload.signature, HS256): opaque to clients, as boxd's are. */
  private jwtOf(org: string, expiresAt: number): string {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const unsigned = `${part({ alg: "HS256", typ: "JWT" })}.${part({ org, exp: expiresAt, jti: randomBytes(6).toString("hex") })}`;
    return `${unsigned}.${createHmac("sha256", this.secret).update(unsigned).digest("base64url")}`;
  }

  /** The organisation of the call's bearer token; UNAUTHENTICATED when missing, unknown or expired. */
  private orgOf(metadata: grpc.Metadata): string {
    const header = String(metadata.get("authorization")[0] ?? "");
    const token = header.startsWith("Bearer ") ? header.slice(7) : "";
    const issued = this.tokens.get(token);
    if (!issued) throw new GrpcRefusal(grpc.status.UNAUTHENTICATED, "missing or malformed authorization");
    if (issued.expiresAt <= Date.now()) throw new GrpcRefusal(grpc.status.UNAUTHENTICATED, "token expired");
    return issued.org;
  }

  // --- the gRPC service ---

  /** The proto's rpcs with raw bytes in, so each request's bytes are checked before they are read. */
  private serviceDefinition(): grpc.ServiceDefinition {
    const definition: Record<string, grpc.MethodDefinition<Buffer, BoxdMessage | Buffer>> = {};
    for (const method of BOXD_METHODS.values()) {
      definition[method.name] = {
        path: method.path,
        requestStream: method.requestStream,
        responseStream: method.responseStream,
        requestSerialize: (value: Buffer) => value,
        requestDeserialize: (bytes: Buffer) => bytes,
        responseSerialize: (value: BoxdMessage | Buffer) =>
          Buffer.isBuffer(value) ? value : encodeMessage(method.responseType, value),
        responseDeserialize: (bytes: Buffer) => bytes,
      };
    }
    return definition as grpc.ServiceDefinition;
  }

  /** Decodes a request's bytes, recording any field the definition lacks. */
  private decode(method: BoxdMethod, bytes: Buffer): BoxdMessage {
    for (const problem of undeclaredFields(method.requestType, bytes)) {
      this.recorder.violations.push({
        call: `POST ${method.path}`,
        operation: method.name,
        where: "request",
        message: problem,
      });
    }
    return decodeMessage(method.requestType, bytes);
  }

  private handlers(): grpc.UntypedServiceImplementation {
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const method of BOXD_METHODS.values()) {
      if (method.name === "Exec")
        handlers.Exec = (call: grpc.ServerDuplexStream<Buffer, BoxdMessage>) => this.exec(call);
      else if (method.name === "UploadFileStream") handlers.UploadFileStream = this.upload.bind(this);
      else
        handlers[method.name] = (call: grpc.ServerUnaryCall<Buffer, unknown>, callback: grpc.sendUnaryData<unknown>) =>
          void this.unary(method, call, callback);
    }
    return handlers;
  }

  private async unary(
    method: BoxdMethod,
    call: grpc.ServerUnaryCall<Buffer, unknown>,
    callback: grpc.sendUnaryData<unknown>,
  ) {
    const request = this.decode(method, call.request);
    const exchange = this.recorder.request("POST", method.path, { body: request });
    try {
      const org = this.orgOf(call.metadata);
      this.takeFault(method.name, false);
      const answer = await this.answer(method.name, org, request);
      this.takeFault(method.name, true);
      exchange.answer(grpc.status.OK, Buffer.isBuffer(answer) ? undefined : answer);
      callback(null, answer);
    } catch (error) {
      this.refuse(exchange, error, callback);
    }
  }

  private refuse(exchange: Exchange, error: unknown, callback: (error: Partial<grpc.ServiceError>) => void) {
    const failure = serviceErrorOf(error);
    // An INTERNAL is the emulator's own failure (the engine refused a pause, say): kept with its message, so
    // the suite's zero-violation check says what it was, not only that a status left the definition.
    if (failure.code === grpc.status.INTERNAL) {
      this.recorder.violations.push({ call: "emulator", where: "response", message: `INTERNAL: ${failure.message}` });
    }
    exchange.answer(failure.code as number);
    callback(failure);
  }

  private machine(org: string, idOrName: string): VmRecord {
    const vm = this.vms.find(org, idOrName);
    // [vm] GetVm: NOT_FOUND for an id/name with no matching machine, including a destroyed one.
    if (!vm) throw new GrpcRefusal(grpc.status.NOT_FOUND, `no machine ${JSON.stringify(idOrName)}`);
    return vm;
  }

  private precondition(vm: VmRecord, wanted: VmRecord["status"], verb: string) {
    // [vm] fakeapi_test.go setStatus/StartVm: FAILED_PRECONDITION "<name> is <status>, not <wanted>".
    if (vm.status !== wanted)
      throw new GrpcRefusal(
        grpc.status.FAILED_PRECONDITION,
        `${vm.name} is ${vm.status}, not ${wanted}: cannot ${verb}`,
      );
  }

  private async answer(rpc: string, org: string, request: BoxdMessage): Promise<BoxdMessage | Buffer> {
    const vmId = String(request.vm_id ?? "");
    switch (rpc) {
      case "CreateVm":
      case "CreateVmFromSnapshot":
        return this.createVm(rpc, org, request);
      case "CreateSnapshot": {
        const vm = this.machine(org, String(request.vm ?? ""));
        // [vm] fakeapi_test.go CreateSnapshot: FAILED_PRECONDITION "<name> is <status>, not running".
        this.precondition(vm, "running", "snapshot");
        const taken = this.snapshots.take(org, vm, String(request.name));
        return { snapshot_id: taken.snapshot_id, name: taken.name, version: taken.version, status: taken.status };
      }
      case "GetSnapshot": {
        this.sameOrg(org, request.org);
        const found = this.snapshots.find(org, String(request.name));
        // [vm] fakeapi_test.go GetSnapshot: NOT_FOUND "no snapshot <name>".
        if (!found) throw new GrpcRefusal(grpc.status.NOT_FOUND, `no snapshot ${JSON.stringify(request.name)}`);
        const { snapshot_id, name, version, status } = found;
        return { snapshot: { snapshot_id, name, version, status } };
      }
      case "GetVm": {
        const vm = this.machine(org, vmId);
        return { vm_id: vm.vm_id, name: vm.name, image_ref: vm.image, status: vm.status };
      }
      case "ListVms":
        return this.listAnswer(org);
      case "StartVm": {
        const vm = this.machine(org, vmId);
        this.precondition(vm, "stopped", "start");
        await this.vms.start(vm);
        return {};
      }
      case "StopVm":
        await this.vms.stop(this.machine(org, vmId));
        return {};
      case "SuspendVm": {
        const vm = this.machine(org, vmId);
        this.precondition(vm, "running", "suspend");
        await this.vms.suspend(vm);
        return { suspend_us: 1 };
      }
      case "ResumeVm": {
        const vm = this.machine(org, vmId);
        this.precondition(vm, "suspended", "resume");
        await this.vms.resume(vm);
        return { resume_us: 1 };
      }
      case "WakeVm":
        // Nothing hibernates here (the timers are recorded, not run): there is never anything to wake.
        throw new GrpcRefusal(grpc.status.FAILED_PRECONDITION, `${this.machine(org, vmId).name} is not hibernated`);
      case "DestroyVm": {
        const vm = this.machine(org, vmId);
        this.closePublicUrl(vm.name);
        await this.vms.destroy(vm);
        return {};
      }
      case "SetAutoSuspendTimeout":
        this.machine(org, vmId).autoSuspendSecs = Number(request.timeout_secs);
        return {};
      case "SetAutoHibernateTimeout":
        this.machine(org, vmId).autoHibernateSecs = Number(request.timeout_secs);
        return {};
      default:
        throw new GrpcRefusal(grpc.status.UNIMPLEMENTED, `${rpc} is not emulated`);
    }
  }

  /** Keys are bound to one organisation (docs.boxd.sh): a request naming another is refused. */
  private sameOrg(org: string, named: unknown): void {
    if (named && named !== org) {
      throw new GrpcRefusal(grpc.status.PERMISSION_DENIED, `this key is not of organisation ${String(named)}`);
    }
  }

  /**
   * CreateVm, or CreateVmFromSnapshot: a machine from the snapshot's
   * capture ([vm] fakeapi_test.go: NOT_FOUND for a missing snapshot). A
   * snapshot still pending or failed is refused FAILED_PRECONDITION: what
   * the service does then is not published (README), and the client only
   * restores ready ones.
   */
  private async createVm(rpc: string, org: string, request: BoxdMessage): Promise<BoxdMessage> {
    this.sameOrg(org, request.org);
    let image = String(request.image_ref ?? "") || this.options.baseImage;
    if (rpc === "CreateVmFromSnapshot") {
      const snapshot = this.snapshots.find(org, String(request.snapshot));
      if (!snapshot) throw new GrpcRefusal(grpc.status.NOT_FOUND, `no snapshot ${JSON.stringify(request.snapshot)}`);
      if (snapshot.status !== "ready" || !snapshot.image)
        throw new GrpcRefusal(grpc.status.FAILED_PRECONDITION, `snapshot ${snapshot.name} is ${snapshot.status}`);
      image = snapshot.image;
    }
    const name = String(request.name ?? "");
    // [docs] "Errors": INVALID_ARGUMENT for an invalid VM name. The name is the public host's first label.
    if (!NAME_FORM.test(name))
      throw new GrpcRefusal(grpc.status.INVALID_ARGUMENT, `invalid VM name ${JSON.stringify(name)}`);
    if (this.vms.find(org, name)) throw new GrpcRefusal(grpc.status.ALREADY_EXISTS, `a machine named ${name} exists`);
    const vm = await this.vms.create(org, name, image);
    await this.servePublicUrl(vm);
    return { vm_id: vm.vm_id, name: vm.name, url: `https://${vm.name}.boxd.sh`, image: vm.image, status: vm.status };
  }

  /**
   * ListVms's answer. Its fields are not published where we could read
   * them (see proto/boxd-api.proto), so the emulator assumes one: entries
   * at field 1, each numbered as GetVmResponse (vm_id 1, name 2, status 5).
   * The client reads it without assuming that (boxd-vm-list.ts).
   */
  private listAnswer(org: string): Buffer {
    const getVm = BOXD_METHODS.get("GetVm") as BoxdMethod;
    const entries = this.vms
      .list(org)
      .map((vm) => encodeMessage(getVm.responseType, { vm_id: vm.vm_id, name: vm.name, status: vm.status }));
    return Buffer.concat(entries.map((entry) => Buffer.concat([Buffer.from([0x0a]), varint(entry.length), entry])));
  }

  // --- Exec and uploads: boxd-exec-session.ts ---

  private exec(call: grpc.ServerDuplexStream<Buffer, BoxdMessage>): void {
    runExec(this.streamHost(), call);
  }

  private upload(
    call: grpc.ServerReadableStream<Buffer, BoxdMessage>,
    callback: grpc.sendUnaryData<BoxdMessage>,
  ): void {
    runUpload(this.streamHost(), call, callback);
  }

  private streamHost(): StreamHost {
    return {
      recorder: this.recorder,
      vms: this.vms,
      execs: this.execs,
      takeSilence: () => this.silentExecs > 0 && this.silentExecs-- > 0,
      decode: (method, bytes) => this.decode(method, bytes),
      orgOf: (metadata) => this.orgOf(metadata),
      machine: (org, id) => this.machine(org, id),
    };
  }
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
