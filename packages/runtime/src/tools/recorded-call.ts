import { performance } from "node:perf_hooks";
import { AgentComputerError } from "@agent-computer/core";
import type { z } from "zod";
import type { ComputerToolSession } from "./computer-tool-session.js";
import { redactSecrets } from "./redact-secrets.js";
import { defineTool, type ToolDefinition } from "./tool-definition.js";
import type { ToolResult } from "./tool-result.js";

/** A tool of the computer tool set: its context is the session of one (computer, bot). */
export type ComputerTool = ToolDefinition<z.ZodType, ComputerToolSession>;

/** `defineTool` with the context fixed to the tool session. */
export const computerTool = <S extends z.ZodType>(definition: ToolDefinition<S, ComputerToolSession>) =>
  defineTool(definition) as unknown as ComputerTool;

const ACTIVITY_TAIL_CHARS = 400;

/** A result that is one text part. */
export const textResult = (value: string): ToolResult => ({ content: [{ type: "text", text: value }] });

/**
 * Runs a mutating tool (or one that hands a file out, like `attach_file`)
 * and reports it as a `computer.command` activity event, failures
 * included. The summary and output are redacted; `work` may return a
 * fuller summary once it knows more (a size read from the file).
 */
export async function recorded(
  session: ComputerToolSession,
  tool: string,
  summary: string,
  work: () => Promise<{ result: ToolResult; outputTail?: string; ok?: boolean; summary?: string }>,
): Promise<ToolResult> {
  const started = performance.now();
  try {
    const { result, outputTail, ok, summary: done } = await work();
    session.record({
      tool,
      summary: redactSecrets(done ?? summary),
      ...(outputTail ? { outputTail: redactSecrets(outputTail).slice(-ACTIVITY_TAIL_CHARS) } : {}),
      ok: ok ?? true,
      durationMs: Math.round(performance.now() - started),
    });
    return result;
  } catch (error) {
    const e = AgentComputerError.is(error) ? error : new AgentComputerError("UNAVAILABLE", String(error));
    session.record({
      tool,
      summary: redactSecrets(summary),
      ok: false,
      error: { code: e.code, message: redactSecrets(e.message) },
      durationMs: Math.round(performance.now() - started),
    });
    throw desktopAware(error);
  }
}

/** A person's control of the screen, told to the model as what to do about it. */
function desktopAware(error: unknown): unknown {
  if (AgentComputerError.is(error, "FENCED_OUT") && /person controls/.test(error.message)) {
    return new AgentComputerError(
      "FENCED_OUT",
      "A person is controlling this screen right now. Wait and try again later, or ask them with request_takeover; do not fight them for the mouse.",
      { cause: error },
    );
  }
  return error;
}
