import { botIdSchema, computerIdSchema } from "@agent-computer/core";
import { z } from "zod";

/**
 * What a capability's sealed blob holds. Only the host that issued it (or
 * one sharing its secret) can read it; the browser carries it opaque.
 */
export interface SealedCapability {
  /** The capability's id: random, not a secret, the handle for `revoke`. */
  readonly id: string;
  readonly computerId: string;
  readonly botId: string;
  /** "terminal": a shell on the desktop, under control (served at `/t/`, never at `/c/`). */
  readonly mode: "view" | "control" | "terminal";
  /** Milliseconds since the epoch after which the capability is refused. */
  readonly expiresAt: number;
  /** The gateway endpoint: its url and token are why this is sealed. */
  readonly endpoint: { readonly id: string; readonly url: string; readonly token: string; readonly expiresAt: number };
  /** For control and terminal: the fields of the user-control lease it was issued under. */
  readonly control?: {
    readonly kind: "user-control";
    readonly key: string;
    readonly holder: string;
    readonly token: number;
    readonly computerId: string;
    readonly botId: string;
    readonly ttlMs: number;
    readonly grantedAt: number;
    readonly expiresAt: number;
  };
  /**
   * For a terminal: the id of the control screen capability it lives under
   * (revoking that one refuses this one too), when there was one.
   */
  readonly screen?: string;
}

const wsUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return url.protocol === "ws:" || url.protocol === "wss:";
  } catch {
    return false;
  }
}, "expected a ws: or wss: URL");

export const sealedCapabilitySchema = z
  .object({
    id: z.string().min(1).max(128),
    computerId: computerIdSchema,
    botId: botIdSchema,
    mode: z.enum(["view", "control", "terminal"]),
    expiresAt: z.number().nonnegative(),
    endpoint: z.object({
      id: z.string().min(1),
      url: wsUrl,
      token: z.string().min(1),
      expiresAt: z.number().nonnegative(),
    }),
    control: z
      .object({
        kind: z.literal("user-control"),
        key: z.string().min(1),
        holder: z.string().min(1),
        token: z.number().int().nonnegative(),
        computerId: computerIdSchema,
        botId: botIdSchema,
        ttlMs: z.number().int().positive(),
        grantedAt: z.number().nonnegative(),
        expiresAt: z.number().nonnegative(),
      })
      .optional(),
    screen: z.string().min(1).max(128).optional(),
  })
  .refine((v) => (v.mode !== "view") === (v.control !== undefined), {
    message: "a control or terminal capability carries its lease, a view capability none",
  })
  .refine((v) => v.mode === "terminal" || v.screen === undefined, {
    message: "only a terminal lives under a screen capability",
  });
