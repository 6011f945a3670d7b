import type { AgentHomeStore } from "@agent-computer/checkpoint";
import type { ComputerSpec, EgressPolicy, Logger, SandboxProvider } from "@agent-computer/core";
import type { ComputerScope, StateStore } from "@agent-computer/leases";
import type { BrowserProxyResolver } from "./browser-proxy.js";
import type { ComputerEvent } from "./computer-event.js";
import type { ComputerOperationsOptions } from "./computer-operations-options.js";
import type { SecretSource } from "./secret-source.js";

/** Options of `createComputerRuntime`. Environment variables fill what is absent. */
export interface ComputerRuntimeOptions {
  provider: SandboxProvider;
  /** Leases and computer records (memory, SQLite or PostgreSQL). */
  stateStore: StateStore;
  /** Where checkpoints live (LocalAgentHomeStore, ObjectAgentHomeStore). */
  homeStore: AgentHomeStore;
  logger?: Logger;
  /**
   * Image, resources, labels and egress policy for every computer this
   * runtime provisions (a policy needs a provider with
   * `capabilities.egress`; others refuse the provision, `UNSUPPORTED`).
   */
  spec?: Pick<ComputerSpec, "image" | "resources" | "labels" | "egress">;
  /**
   * The egress policy of a computer by its scope: the Team computer, or a
   * Private computer's bot (issue 53, per computer and per bot). Undefined
   * from it: `spec.egress`, then the provider's default.
   */
  egressFor?: (scope: ComputerScope) => EgressPolicy | undefined;
  /** Most active desktops per Team computer; 0 = no cap. Default `SANDBOX_TEAM_SCREEN_LIMIT` or 0. */
  screenLimit?: number;
  /** Suspend a computer nobody used for this long. Default `SANDBOX_IDLE_MS` or 15 minutes; 0 = never. */
  idleMs?: number;
  /**
   * On providers that bill while running, suspend after this long up in one
   * stretch unless a run executes or a person controls a screen. Default
   * `COMPUTER_MAX_ACTIVE_MS` or 2 hours; 0 = off.
   */
  maxActiveMs?: number;
  /**
   * Whether background work the bot marked (`scanBackgroundWork` of core: a
   * process holding `<home>/.agent-computer/background/<job>.marker` open)
   * keeps an idle computer up, the idle time counting again from each look.
   * Default true; a scan that cannot tell (`unknown`) never holds it.
   */
  backgroundWorkHoldsIdle?: boolean;
  /** TTL of execution and checkpoint leases; they are renewed at a third of it (default 60 s). */
  leaseTtlMs?: number;
  /** The wall clock for idle accounting and events; inject one in tests. */
  clock?: () => number;
  /**
   * Names this deployment of the runtime: every machine it provisions carries
   * the label `agent-computer.org/deployment=<deployment>` (core's
   * `COMPUTER_LABELS.deployment`), and the reconciler
   * touches only machines with it. Runtimes sharing one state store and
   * provider need different names. Default "default".
   */
  deployment?: string;
  /** Update and recovery operations: their queue and whether this runtime works on them. */
  operations?: ComputerOperationsOptions;
  /**
   * The upstream proxy each bot's browser uses, asked whenever the bot's
   * desktop starts (its runs, the agent tools, `desktopFor`); a proxy
   * passed to `run.desktop({ proxy })` wins for that start. Default: none.
   */
  browserProxy?: BrowserProxyResolver;
  /**
   * The vault bots type named secrets from (`browser_act` with `secret`;
   * `SecretVault` of `@agent-computer/secrets`). Without it, an action
   * naming a secret is UNSUPPORTED.
   */
  secrets?: SecretSource;
  /** Receives every lifecycle event. */
  onEvent?: (event: ComputerEvent) => void;
}
