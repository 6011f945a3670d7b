import type {
  PageActOptions,
  PageActOutcome,
  PageBrowser,
  PageElement,
  PageSnapshot,
  PageSnapshotContinuation,
  PageSnapshotRequest,
} from "@agent-computer/core";
import {
  AgentComputerError,
  ERROR_CODES,
  type ErrorCode,
  type OpContext,
  type PageAction,
  type PageSecretText,
  pageActionSchema,
  parseInput,
  throwIfDone,
} from "@agent-computer/core";
import { z } from "zod";
import type { CollectedPage } from "./collected-page.js";
import { pageDelta } from "./page-delta.js";
import type { PageEngine } from "./page-engine.js";
import type { RememberedSnapshot } from "./remembered-snapshot.js";
import { hashOf, shownHash } from "./shown-hash.js";
import type { SnapshotMemory } from "./snapshot-memory.js";

type Entry<Handle> = RememberedSnapshot<Handle>["entries"][number];

const requestSchema = z
  .object({
    after: z
      .string()
      .regex(/^e[1-9][0-9]{0,5}$/, "a ref like e80")
      .optional(),
    textFrom: z.number().int().min(0).max(10_000_000).optional(),
    delta: z.boolean().optional(),
  })
  .strict();

/** Options of `PageSession`. */
export interface PageSessionOptions {
  /** At most this many elements per snapshot (default and maximum 80, docs/architecture.md §5). */
  maxElements?: number;
  /** Page text is cut at this many characters (default 4000). */
  maxText?: number;
  /** How long `navigate` waits for the load (default 15 s). */
  loadTimeoutMs?: number;
}

// Only web pages: file: and chrome: URLs would let a model read the computer's files through the browser.
const urlSchema = z
  .string()
  .max(8192)
  .refine((u) => /^(https?:\/\/|about:blank$)/i.test(u) && URL.canParse(u), "expected an http(s) URL");

/**
 * The page browser over any `PageEngine`: assigns refs, remembers the
 * latest snapshot, refuses stale refs, and turns a failure midway into an
 * outcome with confirmed progress. The in-computer helper and the emulator
 * both run it, so they answer with the same shapes and errors.
 */
export class PageSession<Handle> implements PageBrowser {
  private readonly maxElements: number;
  private readonly maxText: number;
  private readonly loadTimeoutMs: number;

  constructor(
    private readonly engine: PageEngine<Handle>,
    private readonly memory: SnapshotMemory<Handle>,
    options: PageSessionOptions = {},
  ) {
    this.maxElements = Math.min(80, options.maxElements ?? 80);
    this.maxText = options.maxText ?? 4000;
    this.loadTimeoutMs = options.loadTimeoutMs ?? 15_000;
  }

  async navigate(url: string, ctx: OpContext = {}): Promise<PageSnapshot> {
    const target = parseInput(urlSchema, url, "url");
    throwIfDone(ctx, "browser navigate");
    await this.engine.load(target, this.loadTimeoutMs, ctx);
    return this.snapshot(ctx);
  }

  async snapshot(ctx: OpContext = {}, request: PageSnapshotRequest = {}): Promise<PageSnapshot> {
    const ask = parseInput(requestSchema, request, "snapshot request");
    throwIfDone(ctx, "browser snapshot");
    const previous = await this.memory.load();
    const documentKey = await this.engine.documentKey();
    const sameDocument = previous?.documentKey === documentKey;
    const anchor = ask.after === undefined ? undefined : this.anchorOf(previous, sameDocument, ask.after);
    const { page, handles } = await this.engine.collect(
      {
        op: "collect",
        maxElements: this.maxElements,
        maxText: this.maxText,
        layout: this.engine.layout,
        textFrom: ask.textFrom ?? 0,
      },
      anchor?.handle,
    );
    // An element still on the same document keeps its ref; a new one gets a
    // fresh number, so an old ref can never come to mean another element.
    const known = new Map<string | number, string>();
    if (sameDocument) for (const e of previous.entries) known.set(e.identity, e.ref);
    const secretFields = sameDocument ? (previous.secretFields ?? []) : [];
    let nextRef = previous?.nextRef ?? 1;
    const entries: Entry<Handle>[] = [];
    const elements = page.elements.map((collected, index) => {
      const handle = handles[index] as Handle;
      const identity = this.engine.identity(handle);
      const element = maskSecretField(collected, secretFields, identity);
      const ref = known.get(identity) ?? `e${nextRef++}`;
      const shown = shownHash(element);
      entries.push({ ref, handle, identity, role: element.role, name: element.name, shown });
      return { ref, ...element, shown };
    });
    const text = page.text.replace(/\uE000(\d+)\uE001/g, (_, i: string) => `[${elements[Number(i)]?.ref ?? "?"}]`);
    const window = ask.after === undefined && !ask.textFrom ? "" : `${ask.after ?? ""}+${ask.textFrom ?? 0}`;
    // A continuation adds to what the model holds: the refs it read before stay usable while their elements live.
    const kept =
      window !== "" && sameDocument ? previous.entries.filter((e) => !entries.some((n) => n.ref === e.ref)) : [];
    const snapshotNumber = (previous?.snapshotNumber ?? 0) + 1;
    const lineHashes = text.split("\n").map(hashOf);
    await this.memory.save({
      snapshotNumber,
      documentKey,
      nextRef,
      window,
      lineHashes,
      entries: [...kept, ...entries],
      ...(secretFields.length > 0 ? { secretFields } : {}),
    });
    const full: PageSnapshot = {
      snapshotId: `s${snapshotNumber}`,
      url: page.url,
      title: page.title,
      text,
      textTruncated: page.textTruncated,
      elements: elements.map(({ shown: _shown, ...e }) => e),
      omittedElements: page.omitted,
      ...(page.continuation ? { continuation: this.continuationOf(page.continuation, elements, ask.after) } : {}),
    };
    const diff =
      ask.delta && sameDocument && window === "" && previous.window === ""
        ? pageDelta({ ...previous, lineHashes: previous.lineHashes ?? [] }, elements, text)
        : undefined;
    return diff ? { ...full, ...diff } : full;
  }

  /**
   * Refuses, before anything is focused or typed, a secret on a page outside
   * its origins, or for a field that is not a password field (any other
   * shows its value on the screen, which a model may look at). The page's
   * address comes from the script's own world, which the page cannot
   * rewrite (a same-document history change keeps the origin); typing then
   * stops at any change of address.
   */
  private async refuseUnsafeField(
    secret: PageSecretText,
    run: (
      command: Record<string, unknown>,
    ) => Promise<{ answer?: Record<string, unknown>; error?: AgentComputerError }>,
    ref: string,
    what: string,
  ): Promise<void> {
    const where = await run({ action: "typing-ok", start: true });
    if (where.error) throw where.error;
    const origin = originOf(String(where.answer?.href ?? ""));
    if (origin === undefined || !secret.origins.includes(origin)) {
      throw new AgentComputerError(
        "PERMISSION_DENIED",
        `The secret ${secret.name} may be typed only on ${secret.origins.join(", ") || "no origin"}; ${ref} (${what}) is on ${origin ?? "a page without an origin"}. Nothing was typed.`,
      );
    }
    if (where.answer?.password !== true) {
      throw new AgentComputerError(
        "PERMISSION_DENIED",
        `A secret is typed only into a password field, which the screen masks; ${ref} (${what}) is not one. Nothing was typed.`,
      );
    }
  }

  /**
   * Later snapshots of this document show the field as `[secret <name>]`,
   * whatever the page keeps in it: a page's "show password" control that
   * turns the field into a text field does not put the value in one.
   */
  private async rememberSecretField(identity: string | number, name: string): Promise<void> {
    const latest = await this.memory.load();
    if (!latest) return;
    const kept = (latest.secretFields ?? []).filter((f) => f.identity !== identity);
    await this.memory.save({ ...latest, secretFields: [...kept, { identity, name }] });
  }

  private anchorOf(
    previous: RememberedSnapshot<Handle> | undefined,
    sameDocument: boolean,
    ref: string,
  ): Entry<Handle> {
    const entry = sameDocument ? previous?.entries.find((e) => e.ref === ref) : undefined;
    if (!entry) {
      throw new AgentComputerError(
        "STALE_REF",
        `Ref ${ref} is not in the latest snapshot of this page, so there is nothing to read on from. Take a new browser_snapshot.`,
      );
    }
    return entry;
  }

  private continuationOf(
    cut: NonNullable<CollectedPage["continuation"]>,
    elements: readonly PageElement[],
    after: string | undefined,
  ): PageSnapshotContinuation {
    // After the last listed element, or (when none was listed) further on from where this snapshot started.
    const last = cut.afterIndex >= 0 ? elements[cut.afterIndex]?.ref : after;
    return {
      ...(last ? { after: last } : {}),
      textFrom: cut.textFrom,
      moreElements: cut.moreElements,
      moreText: cut.moreText,
    };
  }

  async act(action: PageAction, ctx: OpContext = {}, options: PageActOptions = {}): Promise<PageActOutcome> {
    const request = parseInput(pageActionSchema, action, "page action");
    const delta = options.delta === true;
    const secret = request.secret === undefined ? undefined : secretTextFor(request.secret, options.secretText);
    throwIfDone(ctx, "browser act");
    const latest = await this.memory.load();
    if (!latest) {
      throw new AgentComputerError("STALE_REF", `There is no snapshot yet; take a browser_snapshot and use its refs.`);
    }
    const entry = latest.entries.find((e) => e.ref === request.ref);
    if (!entry) {
      throw new AgentComputerError(
        "STALE_REF",
        `Ref ${request.ref} is not in the latest snapshot (s${latest.snapshotNumber}): its element is gone or was replaced. Take a new browser_snapshot and use its refs.`,
      );
    }
    const what = `${entry.role} "${entry.name.slice(0, 60)}"`;
    if ((await this.engine.documentKey()) !== latest.documentKey) {
      throw new AgentComputerError(
        "STALE_REF",
        `Ref ${request.ref} (${what}) belongs to a page that has since been replaced (a navigation). Take a new browser_snapshot.`,
      );
    }
    const progress: string[] = [];
    const failed = (code: ErrorCode, message: string, uncertain: boolean) =>
      this.outcome(false, progress, uncertain, { code, message }, delta);
    const run = async (command: Record<string, unknown>) => {
      const answer = await this.engine.perform(entry.handle, { op: "perform", layout: this.engine.layout, ...command });
      const error = answer.error as { code?: string; message?: string } | undefined;
      if (error) {
        const code = (ERROR_CODES as readonly string[]).includes(error.code ?? "")
          ? (error.code as ErrorCode)
          : "UNAVAILABLE";
        const message =
          code === "STALE_REF"
            ? `Ref ${request.ref} (${what}) no longer points to a live element: the page replaced or removed it. Take a new browser_snapshot; refs are never moved to a look-alike.`
            : `${request.action} on ${request.ref} (${what}): ${error.message ?? "failed"}`;
        return { error: new AgentComputerError(code, message) };
      }
      progress.push(...((answer.progress as string[] | undefined) ?? []));
      return { answer };
    };
    try {
      if (request.action === "fill" || request.action === "type") {
        if (secret) await this.refuseUnsafeField(secret, run, request.ref, what);
        const first = await run({ action: "focus-for-typing", clear: request.action === "fill" });
        if (first.error) throw first.error;
        const text = secret?.value ?? request.value ?? "";
        const total = Array.from(text).length;
        const typing = await run({ action: "type-chars", value: text });
        if (typing.error) return failed(typing.error.code, typing.error.message, true);
        const typed = Number(typing.answer.typed ?? 0);
        // A secret's length is not the model's to know either.
        if (secret)
          progress.push(
            typed === total ? `typed the secret ${secret.name}` : `typed part of the secret ${secret.name}`,
          );
        else progress.push(`typed ${typed} of ${total} characters`);
        if (secret) await this.rememberSecretField(entry.identity, secret.name);
        if (typing.answer.navigated) {
          await this.engine.settle();
          const howFar = secret ? `part of the secret ${secret.name}` : `${typed} of ${total} characters`;
          return failed(
            "CONFLICT",
            `The page navigated away while typing into ${request.ref} (${what}) after ${howFar}; what it did with them is unknown. Snapshot and check before retrying.`,
            true,
          );
        }
        await run({ action: "finish-typing" });
      } else {
        const done = await run({ action: request.action, value: request.value });
        if (done.error) {
          // Nothing was done when the first step is refused.
          if (progress.length === 0) throw done.error;
          return failed(done.error.code, done.error.message, true);
        }
      }
    } catch (error) {
      if (AgentComputerError.is(error) && progress.length === 0) throw error;
      // The page went away under the call: the action may or may not have happened.
      return failed(
        "UNAVAILABLE",
        `The page changed while ${request.action} on ${request.ref} (${what}) ran; its effect is uncertain. Snapshot and check before retrying.`,
        true,
      );
    }
    await this.engine.settle();
    return this.outcome(true, progress, false, undefined, delta);
  }

  private async outcome(
    ok: boolean,
    progress: string[],
    uncertain: boolean,
    error: { code: ErrorCode; message: string } | undefined,
    delta: boolean,
  ): Promise<PageActOutcome> {
    const snapshot = await this.snapshot({}, { delta }).catch(() => undefined);
    return { ok, progress, uncertain, ...(error ? { error } : {}), ...(snapshot ? { snapshot } : {}) };
  }
}

/** The host's resolution of the secret an action names; the two must agree. */
function secretTextFor(name: string, resolved: PageSecretText | undefined): PageSecretText {
  if (!resolved || resolved.name !== name || typeof resolved.value !== "string" || !Array.isArray(resolved.origins)) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The action names the secret ${name}, but the host gave no value for it: secrets are resolved by the runtime's vault.`,
    );
  }
  return resolved;
}

function originOf(href: string): string | undefined {
  if (!URL.canParse(href)) return undefined;
  const origin = new URL(href).origin;
  return origin === "null" ? undefined : origin;
}

function maskSecretField<E extends Omit<PageElement, "ref">>(
  element: E,
  secretFields: readonly { identity: string | number; name: string }[],
  identity: string | number,
): E {
  const field = secretFields.find((f) => f.identity === identity);
  return field && element.value !== undefined ? { ...element, value: `[secret ${field.name}]` } : element;
}
