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
    };
    this.vms.set(vm_id, vm);
    return vm;
  }

  /** Suspends: docker pause, once the execs being started have joined (ComputerContainers' freeze gate). */
  async suspend(vm: VmRecord): Promise<void> {
    await this.containers.pause(vm.containerId);
    vm.status = "suspended";
  }

  startCommand(vm: VmRecord, argv: string[], options: ExecOptions): Promise<StartedExec> {
    return this.containers.startCommand(vm.containerId, argv, options);
  }

  run(vm: VmRecord, argv: string[], options: ExecOptions & { input?: MachineInput }): Promise<CollectedExec> {
    return this.containers.run(vm.containerId, argv, options);
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
