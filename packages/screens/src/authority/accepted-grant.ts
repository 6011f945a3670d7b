import { AgentComputerError } from "@agent-computer/core";
import { z } from "zod";

/** A grant of `open` (a screen endpoint, with its mode) or `openTerminal` (no mode). */
const grantSchema = z.object({
  endpoint: z.object({
    mode: z.enum(["view", "control"]).optional(),
    id: z.string().min(1),
    url: z.string().regex(/^wss?:\/\//i, "expected a ws: or wss: URL"),
    token: z.string().min(1),
    expiresAt: z.number().nonnegative(),
  }),
  revoke: z.custom<() => Promise<void>>((v) => typeof v === "function", { message: "expected a function" }),
});

/** An authority's grant, checked: a well-formed endpoint of the kind asked for. */
export type AcceptedGrant = z.infer<typeof grantSchema>;

/**
 * The authority's grant when it is well formed and of the kind asked for
 * (a screen endpoint in that mode, or a terminal endpoint, which has no
 * mode); otherwise revokes it and throws UNAVAILABLE.
 */
export async function acceptedGrant(grant: unknown, asked: "view" | "control" | "terminal"): Promise<AcceptedGrant> {
  const parsed = grantSchema.safeParse(grant);
  const given = parsed.success ? (parsed.data.endpoint.mode ?? "terminal") : undefined;
  if (parsed.success && given === asked) return parsed.data;
  const revoke = (grant as { revoke?: unknown } | null | undefined)?.revoke;
  await Promise.resolve(typeof revoke === "function" ? revoke.call(grant) : undefined).catch(() => {});
  throw new AgentComputerError(
    "UNAVAILABLE",
    parsed.success
      ? `The screen authority gave a ${given} endpoint for a ${asked} request; refused.`
      : `The screen authority gave a malformed endpoint (${parsed.error.issues.map((i) => i.path.join(".") || "(root)").join(", ")}); refused.`,
    { retryable: false },
  );
}
