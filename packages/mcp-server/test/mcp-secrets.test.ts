import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";

// The bin as built (`dist/main.js`) on SANDBOX_PROVIDER=fake, with a
// secrets file: an MCP client (the SDK's own) signs in to a page with a
// password it only names, and nothing the server says or answers holds it.
const bin = join(dirname(fileURLToPath(import.meta.url)), "../dist/main.js");

/** The page checks the password against its reverse, so the page's source does not hold it. */
const loginPage = (reversed: string) => `<!doctype html><title>Sign in</title><body>
<form id="f"><label for="u">Username</label><input id="u">
<label for="p">Password</label><input id="p" type="password">
<button type="submit">Sign in</button></form><p id="out"></p><script>
document.getElementById("f").addEventListener("submit", function (e) {
  e.preventDefault();
  var ok = document.getElementById("p").value.split("").reverse().join("") === ${JSON.stringify(reversed)};
  document.getElementById("out").textContent = ok ? "Signed in" : "Wrong password";
});
</script>`;

const textOf = (result: unknown) =>
  ((result as { content: { type: string; text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("\n");
const refOf = (text: string, pattern: RegExp) => {
  const ref = pattern.exec(text)?.[1];
  if (!ref) throw new Error(`no element matching ${pattern} in:\n${text}`);
  return ref;
};

describe("the MCP server's secrets file", () => {
  it("lets a client type a named secret into a page on its origin, and says its name only", async () => {
    const password = `pw-${randomBytes(10).toString("hex")}`;
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(loginPage(password.split("").reverse().join("")));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dataDir = await mkdtemp(join(tmpdir(), "mcp-secrets-"));
    const secretsFile = join(dataDir, "secrets.json");
    await writeFile(secretsFile, JSON.stringify({ "site-login": { value: password, origins: [origin] } }));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin],
      env: {
        PATH: process.env.PATH ?? "",
        // The run's temporary folder (test/support/run-temporary-folder.ts): the fake provider's machines go there.
        TMPDIR: tmpdir(),
        SANDBOX_PROVIDER: "fake",
        AGENT_COMPUTER_DATA_DIR: dataDir,
        AGENT_COMPUTER_SECRETS_FILE: secretsFile,
      },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const client = new Client({ name: "secrets-test", version: "0.0.0" });
    await client.connect(transport);
    try {
      const page = textOf(await client.callTool({ name: "browser_navigate", arguments: { url: `${origin}/` } }));
      const field = refOf(page, /(e\d+) textbox "?Password/);
      const typed = await client.callTool({
        name: "browser_act",
        arguments: { ref: field, action: "fill", secret: "site-login" },
      });
      expect(textOf(typed)).toContain("typed the secret site-login");
      const signIn = refOf(textOf(typed), /(e\d+) button "?Sign in/);
      const after = await client.callTool({ name: "browser_act", arguments: { ref: signIn, action: "click" } });
      expect(textOf(after)).toContain("Signed in");
      const unknown = await client.callTool({
        name: "browser_act",
        arguments: { ref: field, action: "fill", secret: "other" },
      });
      expect(unknown.isError).toBe(true);
      expect(textOf(unknown)).toContain("NOT_FOUND");
      expect(stderr).toContain("secrets: 1 named (site-login)");
      for (const said of [page, JSON.stringify(typed), JSON.stringify(after), JSON.stringify(unknown), stderr]) {
        expect(said.includes(password)).toBe(false);
      }
    } finally {
      await client.close();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);
});
