import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { type ActivityEvent, createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3ToolResultOutput,
} from "@ai-sdk/provider";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { createComputerToolSet } from "../src/computer-tools.js";

// A scripted conversation through the real AI SDK loop: the mock model's
// turns read the tool results the SDK put in its prompt, as a real model would.

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const toolCalls = (...calls: [string, unknown][]): LanguageModelV3GenerateResult => ({
  content: calls.map(([toolName, input], i) => ({
    type: "tool-call",
    toolCallId: `call-${toolName}-${i}`,
    toolName,
    input: JSON.stringify(input),
  })),
  finishReason: { unified: "tool-calls", raw: "tool_use" },
  usage,
  warnings: [],
});
const text = (value: string): LanguageModelV3GenerateResult => ({
  content: [{ type: "text", text: value }],
  finishReason: { unified: "stop", raw: "end_turn" },
  usage,
  warnings: [],
});

/** The tool results the model was given, by tool name (latest wins). */
function toolResults(options: LanguageModelV3CallOptions) {
  const results = new Map<string, LanguageModelV3ToolResultOutput>();
  for (const message of options.prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) if (part.type === "tool-result") results.set(part.toolName, part.output);
  }
  return results;
}

describe("AI SDK example", () => {
  it("runs generateText with the agent tools: write_file, shell and computer_observe results reach the model", async () => {
    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "ai-sdk-example-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "ai-sdk", botId: "ai" });
    const activity: ActivityEvent[] = [];
    const tools = createComputerToolSet({
      run,
      capabilities: runtime.capabilities,
      onActivity: (e) => activity.push(e),
    });

    const turns = [
      () => toolCalls(["write_file", { path: "haiku.txt", content: "silent circuits hum\nbits in the evening\n" }]),
      () => toolCalls(["shell", { command: "wc -w < haiku.txt" }]),
      (options: LanguageModelV3CallOptions) => {
        const shell = toolResults(options).get("shell");
        expect(shell?.type).toBe("content");
        return toolCalls(["computer_observe", {}]);
      },
      (options: LanguageModelV3CallOptions) => {
        const results = toolResults(options);
        const shell = JSON.stringify(results.get("shell"));
        const words = /stdout:\\n\s*(\d+)/.exec(shell)?.[1];
        const screen = results.get("computer_observe") as { type: string; value: { type: string }[] };
        const sawImage = screen.value.some((part) => part.type === "image-data");
        return text(`The haiku has ${words} words; screenshot received: ${sawImage}.`);
      },
    ];
    let calls = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async (options) => {
        const turn = turns[calls++];
        if (!turn) throw new Error("the model ran out of turns");
        return turn(options);
      },
    });

    const result = await generateText({ model, tools, stopWhen: stepCountIs(10), prompt: "Write a haiku." });

    expect(result.text).toBe("The haiku has 7 words; screenshot received: true.");
    expect(result.steps.map((s) => s.toolCalls.map((c) => c.toolName))).toEqual([
      ["write_file"],
      ["shell"],
      ["computer_observe"],
      [],
    ]);
    const machine = await run.machine();
    expect(new TextDecoder().decode(await machine.files.read(`${run.workdir}/haiku.txt`))).toBe(
      "silent circuits hum\nbits in the evening\n",
    );
    expect(activity.map((e) => e.tool)).toEqual(["write_file", "shell"]);
    // The image went to the model as image-data content, not as a JSON string.
    const last = model.doGenerateCalls.at(-1) as LanguageModelV3CallOptions;
    const observed = toolResults(last).get("computer_observe") as { type: string; value: { type: string }[] };
    expect(observed.value.map((p) => p.type)).toEqual(["text", "image-data"]);
    expect(JSON.stringify(last.tools?.find((t) => t.name === "shell"))).toContain('"command"');
    await run.end("completed");
  });

  it("makes an invalid or failed call a tool-error the app sees, with the same text the model reads", async () => {
    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "ai-sdk-errors-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "ai-sdk", botId: "ai" });
    const tools = createComputerToolSet({ run, capabilities: runtime.capabilities });
    const turns = [
      () => toolCalls(["shell", {}]),
      () => toolCalls(["shell", { command: "true", cwd: "/" }]),
      () => toolCalls(["read_file", { path: "/etc/passwd" }]),
      () => text("giving up"),
    ];
    let calls = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () => (turns[calls++] as () => LanguageModelV3GenerateResult)(),
    });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(10), prompt: "Try." });

    const errors = result.steps.flatMap((step) => step.content.filter((part) => part.type === "tool-error"));
    const messages = errors.map((part) => (part as { error: Error }).error.message);
    expect(messages).toEqual([
      expect.stringMatching(/^INVALID_ARGUMENT: Invalid input to shell: at "command"/),
      expect.stringMatching(/^INVALID_ARGUMENT: Invalid input to shell: at "\(root\)": Unrecognized key: "cwd"/),
      expect.stringMatching(/^INVALID_ARGUMENT: Invalid path "\/etc\/passwd"/),
    ]);
    expect(result.steps.flatMap((step) => step.content.filter((part) => part.type === "tool-result"))).toEqual([]);
    // The model read exactly those texts as error-text.
    const last = model.doGenerateCalls.at(-1) as LanguageModelV3CallOptions;
    const read = last.prompt
      .flatMap((m) => (m.role === "tool" ? m.content : []))
      .map((p) => (p as { output: unknown }).output);
    expect(read).toEqual(messages.map((value) => ({ type: "error-text", value })));
    await run.end("completed");
  });
});
