import { randomBytes } from "node:crypto";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import { type ComputerContainers, HttpAnswer } from "@agent-computer/testing/emulator";

type Json = Record<string, unknown>;

/**
 * Who commands run as in a VM. Not published; the SDK's tutorial
 * (docs/tutorial.md) uploads to `/root/app.js` and runs it, so the VM's
 * agent runs commands as root. The emulator does the same.
 */
export const VM_USER = "0:0";

/** A refusal: JSend `fail` (4xx) with a message in `data` (types.ts FailEnvelope), or `error` (5xx). */
export function refuse(status: number, message: string): HttpAnswer {
  return new HttpAnswer(
    status,
    status >= 500 ? { status: "error", message, code: status } : { status: "fail", data: { message } },
  );
}

/** A sizing preset (types.ts Shape); ids in the docs' form (docs/how-to/expose-a-service.md: `s-4vcpu-4gb`). */
export interface EmulatedShape {
  vcpu: number;
  mem_mib: number;
  default_disk_mib: number;
}

export const EMULATED_SHAPES: Record<string, EmulatedShape> = {
  "s-1vcpu-256mb": { vcpu: 1, mem_mib: 256, default_disk_mib: 2048 },
  "s-4vcpu-4gb": { vcpu: 4, mem_mib: 4096, default_disk_mib: 10_240 },
};

/** A sandbox as the service keeps it (types.ts SandboxView). Destroyed rows stay, listed as `destroyed`. */
export class VmRecord {
  /** Ids are opaque (client.js's example: `sb_01h…`). */
  readonly id = `sb_${randomBytes(10).toString("hex")}`;
  status = "creating";
  readonly createdAt = new Date().toISOString();
  runningAt: string | undefined;
  pausedAt: string | undefined;
  lastResumedAt: string | undefined;
  destroyedAt: string | undefined;
  spawnMs = 0;
  containerId: string | undefined;
  ip = "";
  /** The egress allowlist as asked (types.ts CreateSandboxRequest.egress, SetEgressRequest); empty: all allowed. */
  egress: string[] = [];
  /** The container enforcing `egress` outside the VM (createos-network-fence.ts), while it has rules. */
  fenceId: string | undefined;
  transition: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    readonly shape: string,
    readonly rootfs: string,
    readonly ingressEnabled: boolean,
    readonly envNames: string[],
    private readonly ingressTemplate: (id: string) => string,
  ) {}

  get shapeFacts(): EmulatedShape {
    return EMULATED_SHAPES[this.shape] as EmulatedShape;
  }

  get ingressUrlTemplate(): string | undefined {
    return this.ingressEnabled ? this.ingressTemplate(this.id) : undefined;
  }

  /** types.ts SandboxView, `omitempty` fields left out when unset. */
  get view(): Json {
    const facts = this.shapeFacts;
    return omitUndefined({
      id: this.id,
      status: this.status,
      ip: this.ip || undefined,
      vcpu: facts.vcpu,
      mem_mib: facts.mem_mib,
      disk_mib: facts.default_disk_mib,
      created_at: this.createdAt,
      ingress_enabled: this.ingressEnabled,
      ingress_url_template: this.ingressUrlTemplate,
      name: this.name,
      running_at: this.runningAt,
      destroyed_at: this.destroyedAt,
      spawn_ms: this.spawnMs,
      shape: this.shape,
      rootfs: this.rootfs,
      egress: this.egress,
      envs: this.envNames.length ? this.envNames : undefined,
      paused_at: this.pausedAt,
      last_resumed_at: this.lastResumedAt,
    });
  }

  /** types.ts CreateSandboxResponse (with responses.go's `status`). */
  get created(): Json {
    const facts = this.shapeFacts;
    return omitUndefined({
      id: this.id,
      status: this.status,
      name: this.name,
      ip: this.ip,
      shape: this.shape,
      rootfs: this.rootfs,
      vcpu: facts.vcpu,
      mem_mib: facts.mem_mib,
      disk_mib: facts.default_disk_mib,
      spawn_ms: this.spawnMs,
      egress: this.egress,
      bandwidth_quota_bytes: -1,
      ingress_url_template: this.ingressUrlTemplate,
    });
  }

  /** The running VM's container, or the refusal for a call that needs the VM's agent. */
  running(): string {
    if (this.status !== "running" || !this.containerId) {
      // Not published which status the agent routes answer on a paused VM; errors.js maps 409 to ValidationError.
      throw refuse(409, `sandbox is ${this.status}, not running`);
    }
    return this.containerId;
  }
}

function omitUndefined(value: Json): Json {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}

/**
 * The VMs behind the sandboxes: real containers of the rootfs image (the
 * computer image in tests). Pause is `docker pause` (the VM's memory and
 * processes kept, as the service's pause snapshots memory and disk:
 * docs/explanation/lifecycle.md); resume unpauses the same container
 * under the same id. The VM runs as root (VM_USER), unhardened, as a
 * Firecracker guest's root holds its capabilities, but for NET_RAW (boot).
 */
export class VmMachines {
  constructor(
    private readonly containers: ComputerContainers,
    private readonly env: Record<string, string>,
  ) {}

  /** Boots the VM: answers once it runs (create is synchronous: client.js createSandbox's comment). */
  async boot(vm: VmRecord, image: string, envs: Record<string, string>, extraHosts: string[] = []): Promise<void> {
    const started = performance.now();
    try {
      const { id, ip } = await this.containers.create({
        image,
        name: vm.id.slice(3, 15),
        labels: { "agent-computer.test/createos-sandbox": vm.id },
        user: VM_USER,
        hardened: false,
        // A guest's frames all leave through the host's tap, where the service's egress rules are; here the
        // fence sits inside the container's namespace, which raw frames (AF_PACKET) would pass: no NET_RAW.
        dropCapabilities: ["NET_RAW"],
        env: { ...this.env, ...envs },
        shmBytes: COMPUTER_SHM_BYTES,
        seccompProfile: computerSeccompProfile(),
        extraHosts,
      });
      Object.assign(vm, { containerId: id, ip, status: "running", runningAt: new Date().toISOString() });
      vm.spawnMs = Math.round(performance.now() - started);
    } catch (error) {
      vm.status = "failed";
      throw refuse(500, `the VM did not boot: ${(error as Error).message}`);
    }
  }

  /** pausing → paused: the container frozen, its memory kept. */
  pause(vm: VmRecord): void {
    vm.status = "pausing";
    vm.transition = this.containers.pause(vm.containerId as string).then(
      () => void Object.assign(vm, { status: "paused", pausedAt: new Date().toISOString() }),
      () => void Object.assign(vm, { status: "error" }),
    );
  }

  /** resuming → running: the same container thawed, its processes where they were. */
  resume(vm: VmRecord): void {
    vm.status = "resuming";
    vm.transition = this.containers.unpause(vm.containerId as string).then(
      () => void Object.assign(vm, { status: "running", lastResumedAt: new Date().toISOString() }),
      () => void Object.assign(vm, { status: "error" }),
    );
  }

  /** destroying → destroyed: the container removed; the row stays. */
  destroy(vm: VmRecord): void {
    const id = vm.containerId;
    vm.status = "destroying";
    vm.transition = vm.transition
      .catch(() => {})
      .then(() => (id ? this.containers.remove(id) : undefined))
      .then(() => {
        Object.assign(vm, {
          status: "destroyed",
          containerId: undefined,
          ip: "",
          destroyedAt: new Date().toISOString(),
        });
      });
  }
}
