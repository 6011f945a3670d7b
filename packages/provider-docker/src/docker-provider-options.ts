import { egressPolicySchema } from "@agent-computer/core";
import { COMPUTER_SHM_BYTES } from "@agent-computer/desktop-runtime";
import type { EgressDenial } from "@agent-computer/egress";
import type Docker from "dockerode";
import { z } from "zod";
import { ISOLATED_NETWORK } from "./computer-network.js";

/** The limits a computer gets when neither the provider options nor its spec set them. */
export const DEFAULT_RESOURCES = Object.freeze({ cpus: 2, memoryMb: 6144, pidsLimit: 4096 });

export const dockerProviderOptionsSchema = z.object({
  /** The engine client (default: dockerode's defaults, i.e. DOCKER_HOST or /var/run/docker.sock). */
  docker: z
    .custom<Docker>((v) => typeof (v as Docker | undefined)?.createContainer === "function", {
      message: "expected a dockerode instance",
    })
    .optional(),
  /**
   * The computer image (default: `computerImageRef()` of desktop-runtime,
   * which honours AGENT_COMPUTER_IMAGE and AGENT_COMPUTER_IMAGE_TAG). A
   * spec's `image` wins over this.
   */
  image: z.string().min(1).optional(),
  /**
   * The host folder that holds homes: each machine mounts
   * `<dataDir>/homes/<homeKey>`. When this process itself runs in a
   * container, it must be the same path on the host and here.
   */
  dataDir: z.string().min(1),
  /**
   * The Docker network computers join. The default, "agent-computer", is a
   * bridge this provider makes with inter-container traffic off, so
   * computers cannot reach each other (it needs the engine's iptables, on by
   * default). Any other name is used as it is ("bridge" is Docker's shared
   * one; "none" cuts computers off). Host networking and joining another
   * container's namespace are refused: a computer never shares the host's
   * network.
   */
  network: z
    .string()
    .min(1)
    .refine((n) => n !== "host" && !n.startsWith("container:"), {
      message: 'host networking and "container:" networks are refused',
    })
    .default(ISOLATED_NETWORK),
  /** Most desktops active at once per computer when the spec does not say (0 = no limit). */
  screenLimit: z.number().int().nonnegative().default(0),
  /**
   * How desktop calls reach a computer: `"service"` (the default), the
   * resident service over one websocket through the screen gateway's
   * published port; `"exec"`, the `desktop` command through `docker exec`
   * for every call (docs/architecture.md §4).
   */
  desktopTransport: z.enum(["service", "exec"]).default("service"),
  /**
   * Runs each computer's display stack (the X server, window manager,
   * Chromium, screen servers, proxy relay and the screen gateway with the
   * resident service) in a second container beside the computer's, from
   * the same image, sharing only the home: the bot's processes can then
   * neither see, signal or trace them, nor reach the display, DevTools, the
   * screen servers or the gateway's control socket, so a person's takeover
   * gets input no bot process can touch (docs/architecture.md §4, "Whose
   * input a display takes"). On by default. `launch` then starts only the
   * image's desktop applications, `open` shows files in the bot's browser,
   * and a person's terminal runs beside the bot's processes through the
   * computer's terminal host; each computer takes two containers' limits. `false` runs the display in the bot's
   * container, where a bot can send input to a display during a person's
   * takeover (README, "The display in its own container").
   */
  displayContainer: z.boolean().default(true),
  /**
   * Where the networks a computer shares with its display container take
   * their subnets from (a /29 each, at random; one another network holds
   * is skipped). Docker's own address pools hold about 30 networks, too
   * few for one per computer. Pick a range no network of the host uses.
   */
  displayNetworkPool: z.string().min(9).default("10.213.0.0/16"),
  /** Container ports published on 127.0.0.1 (random host ports) so `portUrl` can reach them. */
  ports: z.array(z.number().int().min(1).max(65535)).default([]),
  /** Where the home is mounted inside the machine (the image's user home). */
  workspacePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$/, "an absolute path without a trailing slash")
    .default("/home/computer"),
  /**
   * Limits applied when a spec has none; a spec's `resources` wins. Every
   * computer gets a limit by default, so one bot cannot starve the host:
   * 2 CPUs, 6 GiB of memory (page cache included: several desktops with
   * Chromium use 2–3 GiB) and 4096 processes and threads.
   */
  resources: z
    .object({
      cpus: z.number().positive().finite().default(DEFAULT_RESOURCES.cpus),
      memoryMb: z.number().int().positive().default(DEFAULT_RESOURCES.memoryMb),
      /** Most processes and threads at once (fork-bomb guard). */
      pidsLimit: z.number().int().positive().default(DEFAULT_RESOURCES.pidsLimit),
    })
    .default(DEFAULT_RESOURCES),
  /** /dev/shm size in bytes (default: what the image needs for Chromium, 1 GiB). */
  shmBytes: z.number().int().positive().default(COMPUTER_SHM_BYTES),
  /**
   * The seccomp profile as JSON text (default: the image's profile, Docker's
   * default plus Chromium's namespace calls).
   */
  seccompProfile: z.string().min(2).optional(),
  /**
   * The egress policy of every computer whose spec gives none (a spec's
   * `egress` wins). Absent: computers reach the network as before (the
   * bridge, README "Network"). With a policy, a computer's only way out is
   * the provider's egress proxy (README, "Egress by policy").
   */
  egress: egressPolicySchema.optional(),
  /**
   * Called for each request the egress proxy refused, with the computer's
   * id: the app's activity event. Reports come from the proxy's log, from
   * when this provider first used the proxy.
   */
  onEgressDenied: z.custom<(denial: EgressDenial) => void>((v) => typeof v === "function").optional(),
  /**
   * CA certificates (PEM, one or more) the egress proxy trusts besides
   * Node's bundled roots when it re-encrypts to a host named in a policy's
   * `credentials`: an internal API's CA (the suite's fixture CA in the
   * tests). Read when the proxy container is made.
   */
  egressUpstreamCa: z.string().includes("-----BEGIN CERTIFICATE-----").optional(),
  /** Seconds `stop` waits before the engine kills the machine (default 5). */
  stopTimeoutSeconds: z.number().int().nonnegative().default(5),
});

export type DockerProviderOptions = z.input<typeof dockerProviderOptionsSchema>;
