import {
  type OpContext,
  type PageAction,
  type PageActOptions,
  type PageActOutcome,
  type PageBrowser,
  type PageSnapshot,
  type PageSnapshotRequest,
  pageActionSchema,
  parseInput,
} from "@agent-computer/core";
import { z } from "zod";

/**
 * Runs one `desktop browse` call in the computer and returns its summary
 * line; `carriesSecret`: only over the resident service (desktop-channel.ts).
 */
export type BrowseRunner = (
  op: "navigate" | "snapshot" | "act",
  input: unknown,
  ctx: OpContext | undefined,
  carriesSecret?: boolean,
) => Promise<Record<string, unknown>>;

const urlSchema = z.string().url().max(8192);

/**
 * The page browser of a Linux desktop: each call is one `desktop browse`
 * run through the machine's exec, which speaks CDP to the bot's Chromium on
 * the computer's loopback, so no DevTools port is ever published.
 */
export class LinuxPageBrowser implements PageBrowser {
  constructor(private readonly browse: BrowseRunner) {}

  async navigate(url: string, ctx?: OpContext): Promise<PageSnapshot> {
    const target = parseInput(urlSchema, url, "url");
    return (await this.browse("navigate", { url: target }, ctx)).snapshot as PageSnapshot;
  }

  async snapshot(ctx?: OpContext, request?: PageSnapshotRequest): Promise<PageSnapshot> {
    // The in-computer PageSession checks the request; it goes as JSON on stdin like the others.
    return (await this.browse("snapshot", request ?? {}, ctx)).snapshot as PageSnapshot;
  }

  async act(action: PageAction, ctx?: OpContext, options: PageActOptions = {}): Promise<PageActOutcome> {
    const request = parseInput(pageActionSchema, action, "page action");
    const { secretText } = options;
    const input = {
      ...request,
      ...(options.delta ? { deltaAfter: true } : {}),
      // Only the fields the in-computer session reads: a caller's extra fields never travel with the value.
      ...(request.secret !== undefined && secretText
        ? { secretText: { name: secretText.name, value: secretText.value, origins: [...secretText.origins] } }
        : {}),
    };
    return (await this.browse("act", input, ctx, request.secret !== undefined)).outcome as PageActOutcome;
  }
}
