import {
  type BotRun,
  ComputerToolSession,
  type ComputerToolSessionOptions,
  callTool,
  computerTools,
  type ToolResult,
  textOf,
} from "@agent-computer/runtime";
import type { SoakLedger } from "./soak-ledger.js";
import { StepFailure } from "./step-failure.js";

/** One tool call's outcome as the harness reads it. */
export interface ToolCall {
  readonly result: ToolResult;
  readonly text: string;
}

/**
 * The error code in a tool's error text: callTool writes `CODE: message`,
 * the page tools `... FAILED: CODE: message`; a desktop batch that failed
 * and a refused repeat carry none.
 */
export function codeOfToolError(text: string): string {
  const code = /^([A-Z][A-Z_]+): /.exec(text) ?? /FAILED: ([A-Z][A-Z_]+):/.exec(text);
  if (code) return code[1] as string;
  if (text.startsWith("Refused:")) return "REFUSED";
  if (/^Action \d+ \(/.test(text)) return "ACTION_FAILED";
  return "TOOL_ERROR";
}

/**
 * The tools of one bot's run, called by name as a model would
 * (ComputerToolSession + computerTools + callTool), each call timed in the
 * ledger under the tool's name. An error result throws a StepFailure.
 */
export class BotTools {
  readonly session: ComputerToolSession;
  private readonly tools: ReturnType<typeof computerTools>;

  constructor(
    run: BotRun,
    capabilities: ComputerToolSessionOptions["capabilities"],
    private readonly ledger: SoakLedger,
  ) {
    this.session = new ComputerToolSession({ run, capabilities, vision: true });
    this.tools = computerTools(this.session);
  }

  get names(): string[] {
    return this.tools.map((t) => t.name);
  }

  async call(name: string, input: unknown, signal?: AbortSignal): Promise<ToolCall> {
    const tool = this.tools.find((t) => t.name === name);
    if (!tool) throw new StepFailure(name, "NOT_OFFERED", `${name} is not offered to this bot`);
    const result = await this.ledger.timed(name, () => callTool(tool, input, this.session, signal));
    const text = textOf(result);
    if (result.isError) throw new StepFailure(name, codeOfToolError(text), text);
    return { result, text };
  }
}
