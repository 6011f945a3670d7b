import { z } from "zod";
import { secretNameSchema } from "./page-secret.js";

const coord = z.number().int().nonnegative();
const point = z.object({ x: coord, y: coord });
const button = z.enum(["left", "right", "middle"]).default("left");

/**
 * Text for the keyboard: never a NUL, which no key types and no command line
 * carries. The machine's desktop service passes it to xdotool as an argument
 * (desktop-runtime/computer/desktop/desktop-actions.ts), where Node's spawn
 * threw a raw TypeError mid-batch and the outcome read "uncertain".
 */
const keyboardText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((text) => !text.includes("\0"), "must not contain a NUL character (\\u0000): no key types it");

/**
 * One step of a `DesktopSession.act` batch. Enough to map Anthropic's and
 * OpenAI's computer-use actions onto: double and triple clicks are `click`
 * with `count` 2 or 3; holding a key is `key_down`, `wait`, `key_up`.
 * Keys use xdotool keysym names joined by "+" ("ctrl+shift+t", "Return").
 */
export const desktopActionSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("move"), x: coord, y: coord }),
  z.object({
    type: z.literal("click"),
    /** Where to click; the current cursor position when absent. */
    x: coord.optional(),
    y: coord.optional(),
    button,
    count: z.number().int().min(1).max(3).default(1),
  }),
  z.object({ type: z.literal("mouse_down"), button }),
  z.object({ type: z.literal("mouse_up"), button }),
  z.object({ type: z.literal("drag"), path: z.array(point).min(2), button }),
  z.object({
    type: z.literal("scroll"),
    x: coord.optional(),
    y: coord.optional(),
    /** Wheel clicks; positive is right / down. */
    dx: z.number().int().default(0),
    dy: z.number().int().default(0),
  }),
  z.object({ type: z.literal("type"), text: keyboardText(100_000) }),
  /**
   * Types the vault secret `secret` names into the focused field of the
   * bot's browser, only on the secret's origins; the host resolves it
   * (`DesktopActOptions.secrets`), the model sees only the name.
   */
  z.object({ type: z.literal("type_secret"), secret: secretNameSchema }),
  z.object({ type: z.literal("key"), keys: keyboardText(200) }),
  z.object({ type: z.literal("key_down"), key: keyboardText(100) }),
  z.object({ type: z.literal("key_up"), key: keyboardText(100) }),
  z.object({ type: z.literal("wait"), ms: z.number().int().min(0).max(60_000) }),
  z.object({
    type: z.literal("zoom"),
    /** A region to return at full resolution, as a PNG in the outcome. */
    region: z.object({ x: coord, y: coord, width: z.number().int().positive(), height: z.number().int().positive() }),
  }),
]);

export type DesktopAction = z.input<typeof desktopActionSchema>;
export type ResolvedDesktopAction = z.output<typeof desktopActionSchema>;

/** A non-empty ordered batch of actions. */
export const desktopActionBatchSchema = z.array(desktopActionSchema).min(1).max(100);
