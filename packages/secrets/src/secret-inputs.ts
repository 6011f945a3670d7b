import { botIdSchema, secretNameSchema, workspaceIdSchema } from "@agent-computer/core";
import { z } from "zod";

/** An exact web origin, `https://github.com` or `http://127.0.0.1:8080`; a trailing `/` is dropped. */
const originSchema = z
  .string()
  .max(2048)
  .transform((text, ctx) => {
    const url = URL.canParse(text) ? new URL(text) : undefined;
    const plain = url && /^https?:$/.test(url.protocol) && url.pathname === "/" && !url.search && !url.hash;
    if (!url || !plain || url.username || url.password) {
      ctx.addIssue({ code: "custom", message: `"${text.slice(0, 80)}" is not an origin like https://github.com` });
      return z.NEVER;
    }
    return url.origin;
  });

/** Where a secret lives: the workspace's, or one bot's (which a bot's own of the same name overrides). */
export const secretAddressSchema = z
  .object({ workspaceId: workspaceIdSchema, botId: botIdSchema.optional(), name: secretNameSchema })
  .strict();

/** A secret's value: 1 to 4,096 characters. */
export const secretValueSchema = z.string().min(1).max(4096);
/** The exact origins a secret may be typed on: 1 to 32. */
export const secretOriginsSchema = z.array(originSchema).min(1).max(32);

export const secretInputSchema = secretAddressSchema
  .extend({ value: secretValueSchema, origins: secretOriginsSchema })
  .strict();

export const secretListSchema = z.object({ workspaceId: workspaceIdSchema, botId: botIdSchema.optional() }).strict();

export const secretLookupSchema = z
  .object({ workspaceId: workspaceIdSchema, botId: botIdSchema, name: secretNameSchema })
  .strict();

export type SecretAddress = z.input<typeof secretAddressSchema>;
export type SecretInput = z.input<typeof secretInputSchema>;
