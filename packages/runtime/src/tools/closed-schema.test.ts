import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createComputerRuntime } from "../runtime/computer-runtime.js";
import { closedSchema } from "./closed-schema.js";
import { ComputerToolSession } from "./computer-tool-session.js";
import { computerTools } from "./computer-tools.js";
import { jsonSchemaOf } from "./tool-adapters.js";
import { callTool, type ToolDefinition } from "./tool-definition.js";

/** Every object node of a JSON Schema, with where it is. */
function objectNodes(node: unknown, at = "(root)"): { at: string; node: Record<string, unknown> }[] {
  if (typeof node !== "object" || node === null) return [];
  const record = node as Record<string, unknown>;
  const here = record.type === "object" ? [{ at, node: record }] : [];
  return [
    ...here,
    ...Object.entries(record).flatMap(([key, value]) =>
      Array.isArray(value)
        ? value.flatMap((item, i) => objectNodes(item, `${at}.${key}[${i}]`))
        : objectNodes(value, `${at}.${key}`),
    ),
  ];
}

describe("closedSchema", () => {
  it("refuses unknown keys at every depth and keeps checks, defaults and descriptions", () => {
    const schema = closedSchema(
      z.object({
        name: z.string().min(2).describe("who"),
        count: z.number().default(1),
        points: z.array(z.object({ x: z.number() })).min(1),
        pick: z.union([z.object({ kind: z.literal("a") }), z.object({ kind: z.literal("b"), n: z.number() })]),
      }),
    );
    expect(schema.parse({ name: "ab", points: [{ x: 1 }], pick: { kind: "a" } })).toEqual({
      name: "ab",
      count: 1,
      points: [{ x: 1 }],
      pick: { kind: "a" },
    });
    const bad = schema.safeParse({ name: "a", extra: 1, points: [{ x: 1, y: 2 }], pick: { kind: "a", n: 1 } });
    expect(bad.error?.issues.map((i) => [i.code, i.path.join(".")])).toEqual(
      expect.arrayContaining([
        ["too_small", "name"],
        ["unrecognized_keys", ""],
        ["unrecognized_keys", "points.0"],
      ]),
    );
    const json = z.toJSONSchema(schema, { io: "input" }) as { properties: Record<string, { description?: string }> };
    expect(json.properties.name?.description).toBe("who");
    for (const { node } of objectNodes(json)) expect(node.additionalProperties).toBe(false);
  });
});

describe("the computer tools' input schemas", () => {
  async function tools() {
    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "closed-schema-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "tools", botId: "alpha" });
    const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: true });
    return { session, tools: computerTools(session) as ToolDefinition<z.ZodType, ComputerToolSession>[] };
  }

  it("are closed at every object, in every tool's JSON Schema", async () => {
    const { tools: all } = await tools();
    expect(all.length).toBeGreaterThanOrEqual(13);
    const open = all.flatMap((tool) =>
      objectNodes(jsonSchemaOf(tool as ToolDefinition))
        .filter(({ node }) => node.additionalProperties !== false)
        .map(({ at }) => `${tool.name} ${at}`),
    );
    expect(open).toEqual([]);
  });

  it("refuse a call with an argument the tool does not take, naming it", async () => {
    const { tools: all, session } = await tools();
    for (const tool of all) {
      const result = await callTool(tool, { surplus_argument: 1 }, session);
      expect(result.isError, tool.name).toBe(true);
      expect(JSON.stringify(result.content), tool.name).toContain('Unrecognized key: \\"surplus_argument\\"');
    }
  });
});
