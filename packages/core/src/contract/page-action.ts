import { z } from "zod";
import { secretNameSchema } from "./page-secret.js";

/**
 * One interaction with one element of the latest snapshot. `fill` replaces
 * the field's text, `type` appends to it; `press` sends a key (`Enter`,
 * `Tab`, `ArrowDown`, ...) to the element. `fill` and `type` take their
 * text from `value`, or from the vault secret `secret` names (the model
 * sees only the name; the host resolves it, see `PageActOptions`).
 */
export const pageActionSchema = z
  .object({
    ref: z
      .string()
      .regex(/^e[1-9][0-9]{0,3}$/, "a ref of the latest snapshot, like e12")
      .describe("The element's ref in your latest browser_snapshot, e.g. e12."),
    action: z
      .enum(["click", "fill", "type", "select", "check", "uncheck", "press", "hover", "scroll_into_view"])
      .describe(
        "click; fill (replace a field's text); type (append to it); select (an option by its label or value); check/uncheck (a checkbox, radio or switch); press (a key such as Enter); hover; scroll_into_view.",
      ),
    value: z
      .string()
      .max(10_000)
      .optional()
      .describe("The text for fill/type, the option for select, the key for press."),
    secret: secretNameSchema
      .optional()
      .describe(
        "For fill/type instead of value: the name of a stored secret (a password, a token) to type. You never see its value.",
      ),
  })
  .strict()
  .superRefine((action, ctx) => {
    const typing = action.action === "fill" || action.action === "type";
    if (action.secret !== undefined && !typing) {
      ctx.addIssue({
        code: "custom",
        path: ["secret"],
        message: `${action.action} takes no secret: only fill and type do`,
      });
    }
    if (action.secret !== undefined && action.value !== undefined) {
      ctx.addIssue({ code: "custom", path: ["secret"], message: "give value or secret, not both" });
    }
    const needsValue = typing || action.action === "select" || action.action === "press";
    if (needsValue && action.value === undefined && action.secret === undefined) {
      ctx.addIssue({ code: "custom", path: ["value"], message: `${action.action} needs a value` });
    }
    if (action.action === "press" && action.value !== undefined && !/^[A-Za-z0-9+ ]{1,40}$/.test(action.value)) {
      ctx.addIssue({ code: "custom", path: ["value"], message: "press takes a key name like Enter, Tab or ArrowDown" });
    }
  });

export type PageAction = z.input<typeof pageActionSchema>;
