import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpError } from "@modelcontextprotocol/sdk/types.js";
import { expect } from "vitest";

export type Content = { type: string; text?: string; data?: string; mimeType?: string }[];

/** What every transport must answer: tools/list, a shell call, a computer_observe call with an image. */
export async function exercise(client: Client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(["shell", "write_file", "computer_observe", "computer_act"]));
  expect(tools.find((t) => t.name === "shell")?.inputSchema).toMatchObject({ type: "object", required: ["command"] });
  // Every tool has a title and MCP's hints, as the SDK client reads them (issue 47).
  for (const tool of tools) {
    expect(tool.title).toEqual(expect.any(String));
    expect(tool.annotations).toMatchObject({ readOnlyHint: expect.any(Boolean), destructiveHint: expect.any(Boolean) });
  }
  expect(tools.find((t) => t.name === "computer_observe")?.annotations?.readOnlyHint).toBe(true);
  expect(tools.find((t) => t.name === "write_file")?.annotations?.readOnlyHint).toBe(false);

  await client.callTool({ name: "write_file", arguments: { path: "hello.txt", content: "hello mcp" } });
  const shell = await client.callTool({ name: "shell", arguments: { command: "cat hello.txt" } });
  expect(shell.isError).toBeFalsy();
  expect((shell.content as Content)[0]).toMatchObject({ type: "text", text: expect.stringContaining("hello mcp") });

  const observed = await client.callTool({ name: "computer_observe", arguments: {} });
  const image = (observed.content as Content).find((c) => c.type === "image");
  expect(image?.mimeType).toMatch(/^image\/(png|jpeg)$/);
  expect(Buffer.from(image?.data ?? "", "base64").byteLength).toBeGreaterThan(0);

  const bad = await client.callTool({ name: "read_file", arguments: { path: "/etc/passwd" } });
  expect(bad.isError).toBe(true);
  expect((bad.content as Content)[0]?.text).toMatch(/^INVALID_ARGUMENT: /);
}

/** The protocol error a request was answered with (fails when it succeeded). */
export async function protocolError(request: Promise<unknown>): Promise<McpError> {
  const outcome = await request.then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a protocol error, got ${JSON.stringify(outcome.result)}`);
  return outcome.error as McpError;
}

/** Every object node of a JSON Schema, with where it is. */
export function objectNodes(node: unknown, at = "(root)"): { at: string; node: Record<string, unknown> }[] {
  if (typeof node !== "object" || node === null) return [];
  const record = node as Record<string, unknown>;
  return [
    ...(record.type === "object" ? [{ at, node: record }] : []),
    ...Object.entries(record).flatMap(([key, value]) =>
      Array.isArray(value)
        ? value.flatMap((item, i) => objectNodes(item, `${at}.${key}[${i}]`))
        : objectNodes(value, `${at}.${key}`),
    ),
  ];
}
