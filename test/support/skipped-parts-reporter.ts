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
 *
 * It also repeats every error caught outside a test (an unhandled rejection,
 * an error thrown after a test ended) after those lines: vitest fails the run
 * for one while every test passed, and prints it above its summary, where a
 * log cut to its tail loses it (CI prints only the tail).
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

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown> = []): void {
    this.reportSkippedParts(testModules);
    reportUnhandledErrors(unhandledErrors, this.root);
  }

  private reportSkippedParts(testModules: ReadonlyArray<TestModule>): void {
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

/** Each error with the test file and test vitest attributed it to, and the head of its stack. */
function reportUnhandledErrors(errors: ReadonlyArray<unknown>, root: string): void {
  if (errors.length === 0) return;
  const out = [`\nErrors outside any test (${errors.length}); vitest fails the run for them:`];
  for (const error of errors) {
    const fields = (typeof error === "object" && error !== null ? error : {}) as Record<string, unknown>;
    const file = typeof fields.VITEST_TEST_PATH === "string" ? relative(root, fields.VITEST_TEST_PATH) : undefined;
    const where = [file, fields.VITEST_TEST_NAME].filter((part) => typeof part === "string");
    const stack = typeof fields.stack === "string" ? fields.stack : String(fields.message ?? error);
    out.push(`  ${where.length > 0 ? where.join(" > ") : "(no test named)"}`);
    out.push(
      ...stack
        .split("\n")
        .slice(0, 8)
        .map((line) => `    ${line}`),
    );
  }
  process.stdout.write(`${out.join("\n")}\n`);
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
