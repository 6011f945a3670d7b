import type { Machine } from "@agent-computer/core";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The tools the computer image installs for the bot's shell (the image's
// Dockerfile: gh, poppler-utils, pandoc, python3-openpyxl), used as a bot
// would: in its own folder, through the shell, on the default Docker
// computer. A package dropped from the image fails its case here.
const env = await dockerTestEnvironment("docker: the computer's tools");
if (!env.missing) {
  const provider = env.provider({ dataDir: await temporaryDataDir() });
  let machine: Machine;
  /** Runs `script` in the bot's folder; its stdout, after checking it succeeded. */
  const sh = async (script: string, timeoutMs = 30_000) => {
    const result = await machine.exec({ shell: script, cwd: "bots/tools", timeoutMs });
    const stderr = Buffer.from(result.stderr).toString();
    expect(result.exitCode, `${script}\n${stderr}`).toBe(0);
    return Buffer.from(result.stdout).toString();
  };

  describe("docker: the computer's tools", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "tools", homeKey: `tools-${Date.now()}` });
      await machine.exec({ argv: ["mkdir", "-p", "bots/tools"] });
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("has the GitHub CLI", async () => {
      expect(await sh("gh --version")).toMatch(/^gh version \d+\.\d+\.\d+/);
    });

    it("converts Markdown to HTML with pandoc", async () => {
      await machine.files.write(
        "bots/tools/report.md",
        new TextEncoder().encode(
          [
            "# Quarterly report",
            "",
            "Revenue grew by **12%** in [Q3](https://example.com/q3).",
            "",
            "| region | units |",
            "| ------ | ----- |",
            "| north  | 1200  |",
            "| south  | 800   |",
            "",
          ].join("\n"),
        ),
      );
      await sh("pandoc --standalone --wrap=none --metadata title=Report -f markdown -t html report.md -o report.html");
      const html = Buffer.from(await machine.files.read("bots/tools/report.html")).toString();
      expect(html).toMatch(/<h1 id="quarterly-report">Quarterly report<\/h1>/);
      expect(html).toContain("<strong>12%</strong>");
      expect(html).toContain('<a href="https://example.com/q3">Q3</a>');
      expect(html).toMatch(/<table>[\s\S]*<td>north<\/td>[\s\S]*<td>1200<\/td>[\s\S]*<\/table>/);
    });

    it("reads back the text of a PDF Chromium printed, with pdftotext", async () => {
      // A page printed headless as a bot would (no desktop needed), then
      // read back: a real PDF with embedded fonts, not a hand-made one.
      await machine.files.write(
        "bots/tools/invoice.html",
        new TextEncoder().encode(
          "<!doctype html><title>Invoice</title><h1>Invoice 4711</h1><p>Total due: 348.50 EUR</p>",
        ),
      );
      await sh(
        'profile=$(mktemp -d) && chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$profile" --no-pdf-header-footer --print-to-pdf=invoice.pdf "file://$PWD/invoice.html" && rm -rf "$profile"',
        60_000,
      );
      expect(await sh("pdfinfo invoice.pdf")).toMatch(/^Pages:\s+1$/m);
      const text = await sh("pdftotext invoice.pdf -");
      expect(text).toContain("Invoice 4711");
      expect(text).toContain("Total due: 348.50 EUR");
    }, 90_000);

    it("writes an .xlsx with openpyxl and reads it back", async () => {
      await sh(`python3 - <<'EOF'
from openpyxl import Workbook
book = Workbook()
sheet = book.active
sheet.title = "Sales"
sheet.append(["region", "units"])
sheet.append(["north", 1200])
sheet.append(["south", 800])
sheet["B4"] = "=SUM(B2:B3)"
book.save("sales.xlsx")
EOF`);
      // A zip holding the workbook's parts, as spreadsheet programs expect.
      expect(await sh("head -c 2 sales.xlsx")).toBe("PK");
      const read = await sh(`python3 - <<'EOF'
import json
from openpyxl import load_workbook
book = load_workbook("sales.xlsx")
sheet = book["Sales"]
print(json.dumps({"sheets": book.sheetnames, "rows": [list(row) for row in sheet.iter_rows(values_only=True)]}))
EOF`);
      expect(JSON.parse(read)).toEqual({
        sheets: ["Sales"],
        rows: [
          ["region", "units"],
          ["north", 1200],
          ["south", 800],
          [null, "=SUM(B2:B3)"],
        ],
      });
    });
  });
}
