import { randomBytes, randomInt } from "node:crypto";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import { type ComputerContainers, HttpAnswer } from "@agent-computer/testing/emulator";

type Json = Record<string, unknown>;

/** The sandbox user's home and work directory (boat-v1.yaml: op:readFile's path rule, op:sshKey's user). */
export const WORK_DIRECTORY = "/home/user";
/** uid:gid of the sandbox user in the machines (the computer image's unprivileged user). */
export const SANDBOX_USER = "1000:1000";

/** An error answer: the envelope's code, message and details (boat-v1.yaml ErrorEnvelope). */
export const fail = (status: number, code: string, message: string, details: Json = {}) =>
  new HttpAnswer(status, { code, message, details });

/** param:SandboxId: `bx_` and eight of these characters. */
const ID_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz";

function sandboxId(): string {
  let id = "bx_";
  for (let i = 0; i < 8; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/** A detached command: CommandStatusResponse's facts, and each log kept whole (tails are cut on read). */
export class DetachedRecord {
  status: "running" | "exited" = "running";
  exitCode: number | null = null;
  stdout: Buffer = Buffer.alloc(0);
  stderr: Buffer = Buffer.alloc(0);
  readonly startedAt = new Date().toISOString();
  finishedAt: string | null = null;

  constructor(
    readonly processId: number,
    readonly pid: number,
    readonly command: string,
    readonly cwd: string,
  ) {}
}

/** A sandbox as the service keeps it (schema Sandbox). */
export class SandboxRecord {
  readonly id = sandboxId();
  name = `Sandbox ${new Date().toISOString().slice(0, 16).replace("T", " ")}`;
  state = "provisioning";
  error: string | null = null;
  /** op:create/op:resume: the auto-stop counts from the last start (the definition's examples). */
  startedAt = Date.now();
  containerId: string | undefined;
  /** The container's address on the bridge, while it runs. */
  ip = "";
  archiveImage: string | undefined;
  readonly routeKey = randomBytes(16).toString("hex");
  readonly createdAt = new Date().toISOString();
  updatedAt = this.createdAt;
  readonly commands = new Map<number, DetachedRecord>();
  private nextProcessId = 1;
  /** Ports hosted (op:hostPort), each with its access. */
  readonly hosted = new Map<number, "private" | "public">();
  transition = Promise.resolve();

  constructor(
    /** null: auto-stop off. */
    public ttlSeconds: number | null,
    public noEnv: boolean,
    /** The named snapshot it started from (its type is inherited). */
    readonly from: string | null,
  ) {}

  get archiveAfter(): number | null {
    return this.ttlSeconds === null ? null : this.startedAt + this.ttlSeconds * 1000;
  }

  /** op:commandStatus ids are integers from 1, per sandbox. */
  takeProcessId(): number {
    return this.nextProcessId++;
  }

  touch(): void {
    this.updatedAt = new Date().toISOString();
  }

  /** schema Sandbox, with what the emulator knows. */
  get view(): Json {
    const archiveAfter = this.archiveAfter;
    return {
      id: this.id,
      name: this.name,
      state: this.state,
      error: this.error,
      health: "ok",
      type: "default",
      vcpu: 4,
      memoryGB: 8,
      billingMultiplier: 1,
      url: null,
      ip: null,
      createdAt: this.createdAt,
      updatedAt: this.updatedAt,
      archiveAfter: archiveAfter === null ? null : new Date(archiveAfter).toISOString(),
      desktopAvailable: false,
      snapshots: true,
      snapshotAvailable: this.archiveImage !== undefined,
      access: "owner",
      subdomain: this.id.replace("_", "-"),
      setupStatus: null,
      environment: this.noEnv ? null : "base",
    };
  }
}

/**
 * The machines behind the sandboxes: real containers of the computer
 * image (the emulator kit's ComputerContainers), the sandbox user's home
 * at /home/user. Archive (stop, or an auto-stop that came due) commits the
 * container to an image and removes it; resume recreates it from that
 * image under the same sandbox id, on a fresh machine as the service does.
 */
export class SandboxMachines {
  constructor(
    private readonly containers: ComputerContainers,
    private readonly accountEnv: Record<string, string> | undefined,
  ) {}

  /** Creates the sandbox's container from `image`; ready once it runs, `error` when it cannot start. */
  provision(sandbox: SandboxRecord, image: string, what: string): void {
    sandbox.state = "provisioning";
    const spec = {
      image,
      name: sandbox.id.slice(3),
      labels: { "agent-computer.test/boat-sandbox": sandbox.id },
      user: SANDBOX_USER,
      env: {
        ...(sandbox.noEnv ? {} : this.accountEnv),
        HOME: WORK_DIRECTORY,
        LANG: "C.UTF-8",
        // The screen gateway admits the host's end of the container's network: where the route proxy connects from.
        AGENT_COMPUTER_GATEWAY_SOURCES: "default-gateway",
      },
      shmBytes: COMPUTER_SHM_BYTES,
      seccompProfile: computerSeccompProfile(),
      // The sandbox user's home, owned by that user (its work directory; the files API's root).
      files: [{ path: WORK_DIRECTORY, mode: 0o755, directory: true, uid: 1000, gid: 1000 }],
    };
    sandbox.transition = this.containers.create(spec).then(
      ({ id, ip }) => {
        Object.assign(sandbox, { containerId: id, ip, state: "ready", startedAt: Date.now() });
        sandbox.touch();
      },
      (error: Error) => void Object.assign(sandbox, { state: "error", error: `could not ${what}: ${error.message}` }),
    );
  }

  /** Archive: the container's filesystem becomes an image and the container goes (memory is not kept). */
  archive(sandbox: SandboxRecord): void {
    if (sandbox.state !== "ready") return;
    sandbox.state = "archiving";
    sandbox.touch();
    sandbox.transition = this.containers.archive(sandbox.containerId as string, sandbox.id.replace("_", "-")).then(
      (archiveImage) => {
        sandbox.commands.clear();
        Object.assign(sandbox, { archiveImage, containerId: undefined, state: "archived" });
        sandbox.touch();
      },
      (error: Error) => void Object.assign(sandbox, { state: "error", error: `archive failed: ${error.message}` }),
    );
  }

  /** Removes the sandbox's container and archive image (a deletion, a lost machine). */
  async remove(sandbox: SandboxRecord, withArchive: boolean): Promise<void> {
    await sandbox.transition.catch(() => {});
    const id = sandbox.containerId;
    sandbox.containerId = undefined;
    sandbox.commands.clear();
    if (id) await this.containers.remove(id);
    const image = withArchive ? sandbox.archiveImage : undefined;
    if (image) {
      sandbox.archiveImage = undefined;
      await this.containers.removeImage(image);
    }
  }

  /** The running sandbox's container, or the refusal the service answers a call that needs one. */
  running(sandbox: SandboxRecord, refusal: HttpAnswer): string {
    if (sandbox.state !== "ready" || !sandbox.containerId) throw refusal;
    return sandbox.containerId;
  }
}

/** op:command on a sandbox that is not running: still starting waits (then 409 boat_starting), else 409 sandbox_not_ready. */
export async function untilRunning(sandbox: SandboxRecord, waitMs: number): Promise<void> {
  const starting = () => sandbox.state === "provisioning";
  const until = Date.now() + waitMs;
  while (starting() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
  if (sandbox.state === "ready") return;
  if (starting()) throw fail(409, "boat_starting", "The sandbox is still starting; send the command again shortly.");
  throw fail(409, "sandbox_not_ready", `The sandbox is ${sandbox.state}; resume it first.`, {
    retryable: false,
    state: sandbox.state,
  });
}
