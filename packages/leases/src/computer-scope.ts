import { botIdSchema } from "@agent-computer/core";
import { z } from "zod";

/**
 * Who a computer serves (docs/architecture.md §2): the bots of a workspace
 * (a Team computer) or one bot (a Private computer, which names it).
 * Stored in the computer record, so nothing reads it back out of an id.
 */
export const computerScopeSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("team") }).strict(),
  z.object({ kind: z.literal("private"), botId: botIdSchema }).strict(),
]);

export type ComputerScope = z.output<typeof computerScopeSchema>;
