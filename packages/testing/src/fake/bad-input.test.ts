import { opContext } from "@agent-computer/core";
import { defineTool } from "@agent-computer/runtime";
import { describe, expect, it } from "vitest";
import { runBench } from "../bench/run-bench.js";
import { createFakeProvider } from "./fake-provider.js";

// Every public entry point, given wrong types or shapes, throws
// INVALID_ARGUMENT whose message names the path into the bad value.
describe("bad input to public functions", () => {
  const provider = createFakeProvider();
  const machine = provider.provision({ computerId: "c", homeKey: "h" });
  const desktop = machine.then((m) => m.openDesktop!("bot"));
  const cases: [string, () => unknown, RegExp][] = [
    ["createFakeProvider", () => createFakeProvider({ screen: { width: "wide" } } as never), /"screen\.width"/],
    ["opContext", () => opContext({ timeoutMs: "soon" } as never), /"timeoutMs"/],
    ["provision", () => provider.provision({ computerId: 7, homeKey: "h" } as never), /"computerId"/],
    [
      "provision labels",
      () => provider.provision({ computerId: "c", homeKey: "h", labels: { a: 1 } } as never),
      /"labels\.a"/,
    ],
    ["reconnect", () => provider.reconnect(42 as never), /ProviderRef/],
    ["list", () => provider.list({ labels: "x" } as never), /"labels"/],
    ["exec", async () => (await machine).exec({ argv: "ls" } as never), /"argv"/],
    ["exec env", async () => (await machine).exec({ shell: "true", env: { "1BAD": "x" } }), /"env\.1BAD"/],
    ["exec ctx", async () => (await machine).exec({ shell: "true" }, { deadline: "x" } as never), /"deadline"/],
    ["files.read", async () => (await machine).files.read(42 as never), /path/i],
    ["files.read opts", async () => (await machine).files.read("a", undefined, { maxBytes: -1 }), /"maxBytes"/],
    ["files.write data", async () => (await machine).files.write("a.txt", "text" as never), /Uint8Array/],
    ["files.list", async () => (await machine).files.list({} as never), /path/i],
    ["importWorkspace", async () => (await machine).files.importWorkspace("tar" as never), /Readable/],
    ["portUrl", async () => (await machine).portUrl!(70000, { private: true }), /Invalid port/],
    ["openDesktop", async () => (await machine).openDesktop!("../bot"), /bot id/],
    [
      "openDesktop opts",
      async () => (await machine).openDesktop!("bot", undefined, { screen: { width: 1 } } as never),
      /"screen\./,
    ],
    ["act type", async () => (await desktop).act([{ type: "warp" } as never]), /"0\.type"/],
    ["act coords", async () => (await desktop).act([{ type: "move", x: -1, y: 0 }]), /"0\.x"/],
    ["act empty", async () => (await desktop).act([]), /DesktopAction batch/],
    ["defineTool", () => defineTool({ name: "Bad Name" } as never), /tool name/],
    ["runBench", () => runBench("t", [], { runs: 0, write: () => {} }), /"runs"/],
  ];

  it.each(cases)("%s", async (_name, call, path) => {
    const error = await (async () => call())().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: "AgentComputerError", code: "INVALID_ARGUMENT" });
    expect((error as Error).message).toMatch(path);
  });
});
