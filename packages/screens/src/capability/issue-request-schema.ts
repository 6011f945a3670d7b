import { botIdSchema, computerIdSchema } from "@agent-computer/core";
import type { Lease } from "@agent-computer/leases";
import { z } from "zod";

/** The longest a capability may live. */
export const MAX_TTL_MS = 24 * 60 * 60 * 1000;

/** A lease as `runtime.takeover` gives it; its kind, computer and bot are checked where it is used. */
export const leaseShape = z.custom<Lease>(
  (v) =>
    typeof v === "object" &&
    v !== null &&
    typeof (v as Lease).kind === "string" &&
    typeof (v as Lease).key === "string" &&
    typeof (v as Lease).holder === "string" &&
    typeof (v as Lease).token === "number",
  { message: "expected a Lease (from runtime.takeover)" },
);

/** Refuses unless `control` is the user-control lease of this computer and bot. */
function requireControlLease(
  v: { computerId: string; botId: string; control?: Lease | undefined },
  ctx: z.RefinementCtx,
  missing: string,
): void {
  if (v.control === undefined) ctx.addIssue({ code: "custom", path: ["control"], message: missing });
  else if (v.control.kind !== "user-control")
    ctx.addIssue({ code: "custom", path: ["control", "kind"], message: 'expected a "user-control" lease' });
  else if (v.control.computerId !== v.computerId || v.control.botId !== v.botId)
    ctx.addIssue({
      code: "custom",
      path: ["control"],
      message: "expected the user-control lease of this computer and bot",
    });
}

const issueBase = {
  computerId: computerIdSchema,
  botId: botIdSchema,
  ttlMs: z.number().int().min(1000).max(MAX_TTL_MS),
  control: leaseShape.optional(),
};

/** `IssueScreenCapabilityRequest`: view takes no lease, control the user-control one. */
export const issueScreenSchema = z
  .object({ ...issueBase, mode: z.enum(["view", "control"]) })
  .strict()
  .superRefine((v, ctx) => {
    if (v.mode === "view" && v.control !== undefined)
      ctx.addIssue({ code: "custom", path: ["control"], message: "a view capability takes no control lease" });
    if (v.mode === "control") requireControlLease(v, ctx, "control needs the user-control lease");
  });

/** `IssueTerminalCapabilityRequest`: always the user-control lease. */
export const issueTerminalSchema = z
  .object(issueBase)
  .strict()
  .superRefine((v, ctx) =>
    requireControlLease(v, ctx, "a terminal needs the user-control lease (there is no view terminal)"),
  );
