import { createHash, randomBytes } from "node:crypto";
import { copyFile, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import type { ResolvedEgressPolicy } from "@agent-computer/core";
import { LOOPBACK_PROXY_PORT } from "@agent-computer/desktop-runtime";
import {
  denialLineReader,
  type EgressDenial,
  type EgressPolicyFile,
  egressProxyScriptPath,
  policyFileName,
} from "@agent-computer/egress";
import type Docker from "dockerode";
import { COMPUTER_ALIAS } from "./display-network.js";
import { EGRESS_LABELS, EGRESS_PROXY_ALIAS, EGRESS_PROXY_PORT } from "./egress-labels.js";
import { engineFailure, engineStatus } from "./engine-failure.js";
import { EngineOutputDemuxer } from "./engine-output-demuxer.js";

// One egress proxy per provider data folder, shared by every computer with a
// policy (README, "Egress by policy"): a container from the computer image
// running the @agent-computer/egress proxy with the image's node, on the
// provider's bridge (its only way out), joined to each such computer's
// internal network. It tells computers apart by the address a connection
// reaches it on: one policy file per network, named after that address.

/** Where the proxy's files are inside its container (its data folder's `egress/`, read-only). */
const MOUNT = "/opt/agent-computer-egress";
/** nobody: the proxy needs no user of the image's, and owns nothing a computer's files could be. */
const PROXY_USER = "65534:65534";

export interface EgressProxyHost {
  readonly docker: Docker;
  /** The provider's data folder: the proxy's files live in `<dataDir>/egress`. */
  readonly dataDir: string;
  /** The network that is the proxy's way out (the provider's bridge). */
  bridgeNetwork(): Promise<string>;
  readonly onDenied?: (denial: EgressDenial) => void;
  /** `egressUpstreamCa`: CAs the proxy trusts besides Node's roots when it re-encrypts to a credential's host. */
  readonly upstreamCa?: string;
}

/** The proxy container's name for a data folder: one per folder, whatever process asks. */
export function egressProxyName(dataDir: string): string {
  return `agent-computer-egress-${createHash("sha256").update(dataDir).digest("hex").slice(0, 12)}`;
}

/**
 * The label value of a network that a computer with `policy` shares with
 * the proxy: its policy file. Loopback destinations go to the computer's
 * loopback proxy, so its display's browser, whose every URL comes to the
 * egress proxy, still loads the bot's `localhost` pages.
 */
export function networkPolicyLabel(computerId: string, policy: ResolvedEgressPolicy, credentialsFile?: string): string {
  const loopbackVia = { host: COMPUTER_ALIAS, port: LOOPBACK_PROXY_PORT };
  // The credentials' values live in their own file (egress-credentials.ts), never in a label.
  const file = {
    computerId,
    policy: { ...policy, credentials: [] },
    loopbackVia,
    ...(credentialsFile ? { credentialsFile } : {}),
  };
  return JSON.stringify(file satisfies EgressPolicyFile);
}

/**
 * Keeps the shared proxy: made on the first provision with a policy (and
 * again if it was removed), each computer's network joined and its policy
 * written before the computer is created, so the computer's first request
 * already meets its policy (a connection with no policy file is refused).
 */
export class EgressProxyKeeper {
  private ready?: Promise<Docker.Container>;
  private following = false;
  readonly name: string;
  /** The proxy's files on this host (`<dataDir>/egress`), mounted read-only into its container. */
  readonly dir: string;

  constructor(private readonly host: EgressProxyHost) {
    this.name = egressProxyName(host.dataDir);
    this.dir = join(host.dataDir, "egress");
  }

  /**
   * Joins the proxy to `network` and serves `label`'s policy there; gives the proxy's address on it.
   * A proxy made here runs from `image` (the computer image: it has node).
   */
  async serve(network: string, label: string, image: string, signal: AbortSignal): Promise<string> {
    const proxy = await this.ensure(image, signal);
    return this.join(proxy, network, label, signal);
  }

  /** The running proxy, made (and every labelled network joined again) where it is missing. */
  ensure(image: string, signal: AbortSignal): Promise<Docker.Container> {
    this.ready ??= this.ensureRunning(image, signal).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready.then(async (proxy) => {
      // A proxy that restarted ended the log stream: follow it again. Removed by hand: made again by this call.
      if ((await stateOf(proxy)) !== "missing") return this.follow(proxy);
      this.ready = undefined;
      return this.ensure(image, signal);
    });
  }

  private async ensureRunning(image: string, signal: AbortSignal): Promise<Docker.Container> {
    const { docker } = this.host;
    const proxy = docker.getContainer(this.name);
    const state = await stateOf(proxy);
    if (state === "running") return this.follow(proxy);
    const startedAt = Math.floor(Date.now() / 1000);
    if (state !== "missing") {
      await proxy.start({ abortSignal: signal }).catch((error: unknown) => {
        if (engineStatus(error) !== 304) throw engineFailure(error, "start the egress proxy");
      });
      await untilListening(proxy, startedAt, signal);
      return this.follow(proxy);
    }
    const files = await this.writeFiles();
    try {
      await docker.createContainer({
        name: this.name,
        Image: image,
        Cmd: ["node", `${MOUNT}/${files.script}`, `${MOUNT}/${files.config}`],
        User: PROXY_USER,
        Labels: { [EGRESS_LABELS.proxy]: this.host.dataDir },
        HostConfig: {
          NetworkMode: await this.host.bridgeNetwork(),
          Mounts: [{ Type: "bind", Source: this.dir, Target: MOUNT, ReadOnly: true }],
          ReadonlyRootfs: true,
          Privileged: false,
          Init: true,
          CapDrop: ["ALL"],
          SecurityOpt: ["no-new-privileges:true"],
          RestartPolicy: { Name: "unless-stopped" },
          // A computer's default: one proxy serves every fenced computer of the data folder.
          NanoCpus: 2e9,
          Memory: 256 * 2 ** 20,
          PidsLimit: 256,
        },
        abortSignal: signal,
      });
    } catch (error) {
      // Another worker made it meanwhile: start and use that one.
      if (engineStatus(error) !== 409) throw engineFailure(error, "create the egress proxy");
    }
    await proxy.start({ abortSignal: signal }).catch((error: unknown) => {
      if (engineStatus(error) !== 304) throw engineFailure(error, "start the egress proxy");
    });
    await untilListening(proxy, startedAt, signal);
    await this.rejoinLabelledNetworks(proxy, signal);
    return this.follow(proxy);
  }

  /** The proxy's script (copied from @agent-computer/egress, named by its hash) and its configuration. */
  private async writeFiles(): Promise<{ script: string; config: string }> {
    await mkdir(join(this.dir, "policies"), { recursive: true, mode: 0o755 });
    const bytes = await readFile(egressProxyScriptPath());
    const script = `proxy-server-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}.cjs`;
    await copyFile(egressProxyScriptPath(), join(this.dir, script));
    await mkdir(join(this.dir, "credentials"), { recursive: true, mode: 0o755 });
    const upstreamCa = this.host.upstreamCa;
    if (upstreamCa) await atomicWrite(join(this.dir, "upstream-ca.pem"), upstreamCa);
    const config = {
      port: EGRESS_PROXY_PORT,
      policiesDir: `${MOUNT}/policies`,
      credentialsDir: `${MOUNT}/credentials`,
      extraUpstreamCaFiles: upstreamCa ? [`${MOUNT}/upstream-ca.pem`] : [],
      // The host's own addresses, as this process sees them (the engine's host where the engine is local).
      hostAddresses: Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((entry) => entry.address)),
    };
    await atomicWrite(join(this.dir, "config.json"), JSON.stringify(config));
    return { script, config: "config.json" };
  }

  /**
   * A proxy made again joins every computer's network it served before
   * (labelled with its name), with the same policy. Networks of a fenced
   * computer made before that label existed are not joined: destroy and
   * provision such a computer again.
   */
  private async rejoinLabelledNetworks(proxy: Docker.Container, signal: AbortSignal): Promise<void> {
    const networks = await this.host.docker
      .listNetworks({
        filters: JSON.stringify({ label: [EGRESS_LABELS.networkPolicy, `${EGRESS_LABELS.networkProxy}=${this.name}`] }),
        abortSignal: signal,
      })
      .catch((error: unknown) => {
        throw engineFailure(error, "list the computers' egress networks");
      });
    for (const network of networks) {
      const label = network.Labels?.[EGRESS_LABELS.networkPolicy];
      if (label) await this.join(proxy, network.Name, label, signal).catch(() => {});
    }
  }

  private async join(proxy: Docker.Container, network: string, label: string, signal: AbortSignal): Promise<string> {
    const { docker } = this.host;
    signal.throwIfAborted();
    await docker
      .getNetwork(network)
      .connect({ Container: proxy.id, EndpointConfig: { Aliases: [EGRESS_PROXY_ALIAS] } })
      .catch((error: Error) => {
        if (!/already exists/i.test(String(error.message)))
          throw engineFailure(error, `join the egress proxy to ${network}`);
      });
    const info = await docker
      .getNetwork(network)
      .inspect()
      .catch((error: unknown) => {
        throw engineFailure(error, `look up ${network}`);
      });
    // getContainer(name).id is the name: the network lists the proxy under its real id, and its name.
    const endpoint = Object.values(info.Containers ?? {}).find((entry) => entry.Name === this.name);
    const address = endpoint?.IPv4Address?.split("/")[0];
    if (!address)
      throw engineFailure(new Error("the proxy has no address there"), `join the egress proxy to ${network}`);
    await atomicWrite(join(this.dir, "policies", policyFileName(address)), label);
    return address;
  }

  /** Turns the proxy's denial lines into `onDenied` calls, from now on, once per keeper. */
  private async follow(proxy: Docker.Container): Promise<Docker.Container> {
    const { onDenied } = this.host;
    if (!onDenied || this.following) return proxy;
    this.following = true;
    const stream = (await proxy.logs({
      follow: true,
      stdout: true,
      stderr: false,
      since: Math.floor(Date.now() / 1000),
    })) as unknown as NodeJS.ReadableStream & { destroy(): void };
    const readDenials = denialLineReader(onDenied);
    const demuxer = new EngineOutputDemuxer((_, payload) => readDenials(payload.toString("utf8")));
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    const stop = () => {
      this.following = false;
    };
    stream.on("end", stop);
    stream.on("error", stop);
    // The log stream must not keep the app's process alive on its own.
    (stream as unknown as { socket?: { unref?(): void } }).socket?.unref?.();
    return proxy;
  }
}

/**
 * Waits for the proxy's `{"listening":...}` line (proxy-main.ts of
 * @agent-computer/egress) since `since`: a computer made before it would
 * find the port closed on its first request (seen in
 * test/docker-egress-credentials.test.ts, whose first curl came first).
 */
async function untilListening(proxy: Docker.Container, since: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    const logs = await proxy.logs({ stdout: true, stderr: false, since }).catch(() => Buffer.alloc(0));
    if (String(logs).includes('"listening"')) return;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw engineFailure(new Error("it did not listen within 20 s"), "start the egress proxy");
}

type ProxyState = Docker.ContainerInspectInfo["State"]["Status"] | "missing";

async function stateOf(proxy: Docker.Container): Promise<ProxyState> {
  try {
    return (await proxy.inspect()).State.Status;
  } catch (error) {
    if (engineStatus(error) === 404) return "missing";
    throw engineFailure(error, "look up the egress proxy");
  }
}

/** Replaced whole, so the proxy never reads half a file. */
async function atomicWrite(file: string, text: string): Promise<void> {
  const written = `${file}.${randomBytes(4).toString("hex")}`;
  await writeFile(written, text, { mode: 0o644 });
  await rename(written, file);
}
