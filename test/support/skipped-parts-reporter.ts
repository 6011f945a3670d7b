import { relative } from "node:path";
import type { Reporter, TestCase, TestModule, TestSuite } from "vitest/node";

/**
 * Ends a run with one line per skipped part and why it was skipped, so a
 * contributor without Docker, Chromium or PostgreSQL sees what `npm test`
 * left out (docs/testing.md, "Two tiers"). A part is a file the
 * configuration left out (`leftOut`, with `why`), the outermost skipped
 * suite (its name ends in "(skipped: why)", as `reportMissingProvider`
 * writes it) or a skipped test outside one (with the note it gave
 * `context.skip`). Under CI a missing part fails instead, so these lines
 * list only capability skips there.
 */
export default class SkippedPartsReporter implements Reporter {
  private root = process.cwd();
  private filtered = false;

  /** `leftOut`: files the configuration did not run at all, each listed with `why`. */
  constructor(private readonly options: { leftOut?: readonly string[]; why?: string } = {}) {}

  onInit(vitest: { config: { root: string; testNamePattern?: RegExp } }): void {
    this.root = vitest.config.root;
    // With -t, every test the pattern leaves out is "skipped": no part is missing.
    this.filtered = vitest.config.testNamePattern !== undefined;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    if (this.filtered) return;
    const lines = [
      ...(this.options.leftOut ?? []).map((file) => `${file}: the whole file (${this.options.why ?? "left out"})`),
      ...testModules.flatMap((module) => skippedParts(module).map((part) => `${this.file(module)}: ${part}`)),
    ];
    if (lines.length === 0) return;
    const out = [`\nSkipped parts (${lines.length}):`, ...lines.map((line) => `  skipped ${line}`), ""];
    process.stdout.write(`${out.join("\n")}\n`);
  }

  private file(module: TestModule): string {
    return relative(this.root, module.moduleId);
  }
}

/** The outermost skipped suites and the skipped tests outside them, each as "what (why)". */
function skippedParts(module: TestModule): string[] {
  if (module.state() === "skipped" && module.children.size === 0) return ["the whole file"];
  const parts: string[] = [];
  const visit = (children: Iterable<TestCase | TestSuite>, path: string[]) => {
    for (const child of children) {
      const name = [...path, child.name];
      if (child.type === "suite") {
        if (child.state() === "skipped") parts.push(name.join(" > "));
        else visit(child.children, name);
        continue;
      }
      const result = child.result();
      if (result.state !== "skipped") continue;
      parts.push(result.note ? `${name.join(" > ")} (${result.note})` : name.join(" > "));
    }
  };
  visit(module.children, []);
  return parts;
}
