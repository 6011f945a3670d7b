import type { AgentHomeStore } from "@agent-computer/checkpoint";
import type { SandboxProvider } from "@agent-computer/core";
import { z } from "zod";

/** Checks `ComputerRuntimeOptions` and fills their defaults. */
export const computerRuntimeOptionsSchema = z.object({
  provider: z.custom<SandboxProvider>(
    (v) => typeof v === "object" && v !== null && (v as SandboxProvider).specificationVersion === "v1",
    { message: 'expected a SandboxProvider with specificationVersion "v1"' },
  ),
  stateStore: z.custom(
    (v) => typeof v === "object" && v !== null && typeof (v as { commit?: unknown }).commit === "function",
    {
      message: "expected a StateStore",
    },
  ),
  homeStore: z.custom<AgentHomeStore>(
    (v) => typeof v === "object" && v !== null && typeof (v as AgentHomeStore).checkpoint === "function",
    { message: "expected an AgentHomeStore" },
  ),
  screenLimit: z.number().int().nonnegative().optional(),
  idleMs: z.number().int().nonnegative().optional(),
  maxActiveMs: z.number().int().nonnegative().optional(),
  backgroundWorkHoldsIdle: z.boolean().default(true),
  leaseTtlMs: z.number().int().min(100).default(60_000),
  deployment: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, "letters, digits, . _ and -, up to 63")
    .default("default"),
  operations: z.object({}).passthrough().optional(),
  clock: z.custom<() => number>((v) => typeof v === "function", { message: "expected a function" }).optional(),
  onEvent: z.custom((v) => typeof v === "function", { message: "expected a function" }).optional(),
  browserProxy: z.custom((v) => typeof v === "function", { message: "expected a function" }).optional(),
  secrets: z
    .custom((v) => typeof (v as { resolve?: unknown } | null)?.resolve === "function", {
      message: "expected a secret source (SecretVault)",
    })
    .optional(),
});
