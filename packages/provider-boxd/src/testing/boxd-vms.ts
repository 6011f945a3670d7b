import { randomBytes } from "node:crypto";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import type {
  CollectedExec,
  ComputerContainers,
  ExecOptions,
  MachineInput,
  StartedExec,
} from "@agent-computer/testing/emulator";

/** The machine user's home and every command's working directory (docs.boxd.sh control-plane: "The working directory is /home/boxd"). */
export const BOXD_HOME = "/home/boxd";
/** uid:gid of the machine's user in the emulator's containers (the computer image's unprivileged user). */
export const MACHINE_USER = "1000:1000";

/** One machine as the emulator keeps it. */
export interface VmRecord {
  readonly vm_id: string;
  readonly name: string;
  readonly org: string;
  /** GetVmResponse.status: running, suspended (docker pause, memory kept), stopped (cold). */
  status: "running" | "suspended" | "stopped";
  containerId: string;
  /** The container's address on the engine's network (where the public URL forwards). */
  ip: string;
  image: string;
  /** The idle timers as last set (SetAutoSuspendTimeout, SetAutoHibernateTimeout); undefined until set. */
  autoSuspendSecs?: number;
  autoHibernateSecs?: number;
  readonly createdAt: number;
  /** Engine execs being started: a pause waits for them (an exec starting under the freezer hangs for good). */
  readonly starting: Set<Promise<unknown>>;
  /** Set while a pause is under way: new execs wait for it. */
  pausing?: Promise<unknown>;
}

/** `vm_` and eight hex characters, the form of the public fake's ids (discobox-ai/vm fakeapi_test.go newVM). */
function vmIdOf(): string {
  return `vm_${randomBytes(4).toString("hex")}`;
}

/**
 * The organisations' machines as containers of the computer image: names
 * unique per organisation, suspend as docker pause (memory and processes
 * kept, as boxd's "pause ... keeps memory, running processes, and open
 * sockets intact", docs.boxd.sh internal-cli), stop as a container stop
 * (cold: memory lost), destroy removes the container.
 */
export class BoxdVms {
  private readonly vms = new Map<string, VmRecord>();

  constructor(private readonly containers: ComputerContainers) {}

  /** A machine of `org` by id or name (GetVmRequest.vm_id takes either). */
  find(org: string, idOrName: string): VmRecord | undefined {
    for (const vm of this.vms.values()) {
      if (vm.org === org && (vm.vm_id === idOrName || vm.name === idOrName)) return vm;
    }
    return undefined;
  }

  list(org: string): VmRecord[] {
    return [...this.vms.values()].filter((vm) => vm.org === org);
  }

  async create(org: string, name: string, image: string): Promise<VmRecord> {
    const vm_id = vmIdOf();
    const { id, ip } = await this.containers.create({
      image,
      name: vm_id.slice(3),
      labels: { "agent-computer.test/boxd-vm": vm_id },
      user: MACHINE_USER,
      env: { HOME: BOXD_HOME, LANG: "C.UTF-8", AGENT_COMPUTER_GATEWAY_SOURCES: "default-gateway" },
      shmBytes: COMPUTER_SHM_BYTES,
      seccompProfile: computerSeccompProfile(),
      files: [{ path: BOXD_HOME, mode: 0o755, directory: true, uid: 1000, gid: 1000 }],
    });
    const vm: VmRecord = {
      vm_id,
      name,
      org,
      status: "running",
      containerId: id,
      ip,
      image,
      createdAt: Date.now(),
      starting: new Set(),
    };
    this.vms.set(vm_id, vm);
    return vm;
  }

  /**
   * Pauses once every exec being started has its process (the engine's
   * answer to a start comes before runc has joined the container: a pause
   * in between froze the joining runc and the container with it).
   */
  async suspend(vm: VmRecord): Promise<void> {
    const paused = Promise.allSettled([...vm.starting]).then(() => this.containers.pause(vm.containerId));
    vm.pausing = paused;
    try {
      await paused;
      vm.status = "suspended";
    } finally {
      vm.pausing = undefined;
    }
  }

  /**
   * Starts an engine exec, counted as starting until its process runs (see
   * `suspend`). The caller gets the exec at once, so it reads the output
   * from the start.
   */
  async startCommand(vm: VmRecord, argv: string[], options: ExecOptions): Promise<StartedExec> {
    await vm.pausing?.catch(() => {});
    const started = this.containers.startCommand(vm.containerId, argv, options);
    void this.track(vm, started.then(untilProcess)).catch(() => {});
    return started;
  }

  /** Runs an engine exec to its end, counted as starting throughout (a short helper: a kill, an upload). */
  async run(vm: VmRecord, argv: string[], options: ExecOptions & { input?: MachineInput }): Promise<CollectedExec> {
    await vm.pausing?.catch(() => {});
    return this.track(vm, this.containers.run(vm.containerId, argv, options));
  }

  private async track<T>(vm: VmRecord, work: Promise<T>): Promise<T> {
    vm.starting.add(work);
    try {
      return await work;
    } finally {
      vm.starting.delete(work);
    }
  }

  async resume(vm: VmRecord): Promise<void> {
    await this.containers.unpause(vm.containerId);
    vm.status = "running";
  }

  async stop(vm: VmRecord): Promise<void> {
    if (vm.status === "suspended") await this.containers.unpause(vm.containerId);
    await this.containers.stop(vm.containerId);
    vm.status = "stopped";
  }

  async start(vm: VmRecord): Promise<void> {
    vm.ip = await this.containers.start(vm.containerId);
    vm.status = "running";
  }

  async destroy(vm: VmRecord): Promise<void> {
    this.vms.delete(vm.vm_id);
    await this.containers.remove(vm.containerId).catch(() => {});
  }

  async removeAll(): Promise<void> {
    this.vms.clear();
    await this.containers.removeAll();
  }
}

/** Waits until the engine reports the exec's process (a pid, or its end), at most a few seconds. */
async function untilProcess({ exec }: StartedExec): Promise<void> {
  const until = Date.now() + 5_000;
  while (Date.now() < until) {
    const state = await exec.inspect().catch(() => undefined);
    if (!state || (state.Pid ?? 0) > 0 || !state.Running) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
