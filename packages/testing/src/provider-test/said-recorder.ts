import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Logger, type Machine, type OpContext, opContext } from "@agent-computer/core";
import { expect, vi } from "vitest";

/**
 * Everything a provider and the runtime over it say, kept to be searched
 * for a secret (an API key, a token): log lines, events, errors with their
 * causes, the console, a machine's environment and exported home, and the
 * files a home store saved. The secrets suites of the hosted providers
 * share it.
 */
export class SaidRecorder {
  readonly said: string[] = [];
  readonly logger: Logger;
  /** For the runtime's `onEvent`. */
  readonly onEvent = (event: unknown) => void this.said.push(JSON.stringify(event));

  constructor() {
    const note = (message: string, fields?: Record<string, unknown>) =>
      void this.said.push(JSON.stringify([message, fields]));
    this.logger = { debug: note, info: note, warn: note, error: note };
  }

  /** A context whose logger is recorded. */
  ctx(timeoutMs = 60_000): OpContext {
    return opContext({ timeoutMs, logger: this.logger });
  }

  /** An error as every way it may be shown: its text, JSON, stack and cause. */
  noteError(error: unknown): void {
    this.said.push(
      String(error),
      JSON.stringify(error),
      String((error as Error)?.stack),
      String((error as Error)?.cause),
    );
  }

  /** Records the console until the returned function restores it. */
  captureConsole(): () => void {
    const spies = (["log", "warn", "error", "info", "debug"] as const).map((name) =>
      vi
        .spyOn(console, name)
        .mockImplementation((...args: unknown[]) => void this.said.push(args.map(String).join(" "))),
    );
    return () => {
      for (const spy of spies) spy.mockRestore();
    };
  }

  /** The machine's environment and its exported home. */
  async noteMachine(machine: Machine): Promise<void> {
    const environment = await machine.exec({ argv: ["env"] }, this.ctx());
    this.said.push(Buffer.from(environment.stdout).toString("latin1"));
    const chunks: Buffer[] = [];
    for await (const chunk of await machine.files.exportWorkspace(this.ctx())) chunks.push(chunk as Buffer);
    this.said.push(Buffer.concat(chunks).toString("latin1"));
  }

  /** Every file under `dataDir` (a home store's checkpoints). */
  async noteFiles(dataDir: string): Promise<void> {
    for (const name of await readdir(dataDir, { recursive: true })) {
      const bytes = await readFile(join(dataDir, String(name))).catch(() => undefined);
      if (bytes) this.said.push(bytes.toString("latin1"));
    }
  }

  /**
   * None of `secrets` was said; `proof` are phrases that were (the search
   * read real output: the provider's log lines, a redaction mark).
   */
  expectNeverSaid(secrets: readonly string[], proof: readonly string[]): void {
    const everything = this.said.join("\n");
    expect(this.said.length).toBeGreaterThan(10);
    for (const phrase of proof) expect(everything).toContain(phrase);
    for (const secret of secrets) expect(everything.includes(secret), "a secret was said").toBe(false);
  }
}
