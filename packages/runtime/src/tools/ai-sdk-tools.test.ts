import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { createComputerRuntime } from "../runtime/computer-runtime.js";
import { AiSdkToolCallError, type AiSdkToolOutput, toAiSdkModelOutput, toAiSdkTools } from "./ai-sdk-tools.js";
import { ComputerToolSession } from "./computer-tool-session.js";
import { computerTools } from "./computer-tools.js";

async function setup() {
  const runtime = createComputerRuntime({
    provider: createFakeProvider(),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "ai-sdk-tools-")) }),
    idleMs: 0,
  });
  const run = runtime.startRun({ workspaceId: "tools", botId: "alpha" });
  const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: true });
  // Stands in for the `ai` package's `jsonSchema`, which wraps the schema the same way.
  const wrap = (schema: Record<string, unknown>) => ({ wrapped: schema });
  return { run, session, tools: toAiSdkTools(computerTools(session), session, wrap) };
}

describe("toAiSdkTools", () => {
  it("gives every tool a description and its input JSON Schema through the given jsonSchema function", async () => {
    const { tools } = await setup();
    expect(Object.keys(tools)).toContain("shell");
    expect(Object.keys(tools)).toContain("computer_observe");
    const shell = tools.shell;
    expect(shell?.description).toMatch(/shell/i);
    expect(shell?.inputSchema.wrapped).toMatchObject({ type: "object", required: ["command"] });
    expect(shell?.inputSchema.wrapped).not.toHaveProperty("$schema");
  });

  it("runs a tool, and hands the model text, images as image-data, and errors as error-text", async () => {
    const { tools, run } = await setup();
    const written = await tools.write_file?.execute({ path: "a.txt", content: "hi" }, {});
    expect(written?.isError).toBeUndefined();
    const shell = (await tools.shell?.execute({ command: "cat a.txt" }, {})) as AiSdkToolOutput;
    expect(shell.content[0]).toMatchObject({ type: "text" });
    expect(toAiSdkModelOutput(shell)).toEqual({
      type: "content",
      value: [{ type: "text", text: expect.stringContaining("hi") }],
    });
    expect(JSON.parse(JSON.stringify(shell))).toEqual(shell);
    expect(run.workdir).toMatch(/alpha/);

    const observed = (await tools.computer_observe?.execute({}, {})) as AiSdkToolOutput;
    const model = tools.computer_observe?.toModelOutput({ output: observed });
    expect(model?.type).toBe("content");
    const image = model?.type === "content" ? model.value.find((p) => p.type === "image-data") : undefined;
    expect(image).toMatchObject({ mediaType: expect.stringMatching(/^image\//) });
    expect(Buffer.from((image as { data: string }).data, "base64").byteLength).toBeGreaterThan(0);

    // A bad call throws (the AI SDK makes it a tool-error), the text the model reads as its message.
    const bad = await tools.shell?.execute({}, {}).catch((error: unknown) => error);
    expect(bad).toBeInstanceOf(AiSdkToolCallError);
    expect((bad as AiSdkToolCallError).message).toMatch(/^INVALID_ARGUMENT: Invalid input to shell: at "command"/);
    expect((bad as AiSdkToolCallError).output.isError).toBe(true);
    expect(toAiSdkModelOutput((bad as AiSdkToolCallError).output)).toEqual({
      type: "error-text",
      value: (bad as AiSdkToolCallError).message,
    });
    const extra = await tools.shell?.execute({ command: "true", cwd: "/" }, {}).catch((error: unknown) => error);
    expect((extra as Error).message).toMatch(/Unrecognized key: "cwd"/);
  });

  it("sends images as media to a model of the previous specification (v2, ai 5), image-data to the current one", async () => {
    const wrap = (schema: Record<string, unknown>) => schema;
    // A fresh session each time: a second look at an unchanged screen is text only.
    const partsFor = async (model?: string | { specificationVersion: string }) => {
      const { session } = await setup();
      const tools = toAiSdkTools(computerTools(session), session, wrap, model === undefined ? {} : { model });
      const observed = await tools.computer_observe?.execute({}, {});
      const output = tools.computer_observe?.toModelOutput({ output: observed });
      return output?.type === "content" ? output.value.map((part) => part.type) : [];
    };
    expect(await partsFor({ specificationVersion: "v2" })).toContain("media");
    expect(await partsFor({ specificationVersion: "v2" })).not.toContain("image-data");
    for (const current of [undefined, "openai/gpt-5", { specificationVersion: "v3" }]) {
      const parts = await partsFor(current);
      expect(parts).toContain("image-data");
      expect(parts).not.toContain("media");
    }
  });

  it("keeps attached files out of what the model reads", async () => {
    const { tools } = await setup();
    await tools.write_file?.execute({ path: "r.txt", content: "report" }, {});
    const out = (await tools.attach_file?.execute({ path: "r.txt" }, {})) as AiSdkToolOutput;
    expect(out.files).toEqual([
      { name: "r.txt", mimeType: expect.any(String), data: Buffer.from("report").toString("base64") },
    ]);
    expect(JSON.stringify(toAiSdkModelOutput(out))).not.toContain(out.files[0]?.data);
  });
});
