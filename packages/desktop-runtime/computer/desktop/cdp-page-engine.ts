import { AgentComputerError } from "@agent-computer/core";
import { type CollectedPage, PAGE_SCRIPT, type PageEngine } from "@agent-computer/page-browser";
import type { CdpConnection } from "./cdp-connection.js";
import { CdpTrustedInput, type ElementScript } from "./cdp-trusted-input.js";
import { sleep } from "./process-status.js";

interface RemoteObject {
  objectId?: string;
  value?: unknown;
}
interface CallResult {
  result?: RemoteObject;
  exceptionDetails?: { text?: string; exception?: { description?: string } };
}

/**
 * The bot's visible Chromium tab as a `PageEngine`: the page script runs in
 * an isolated world (the page's scripts can neither see nor fake it), and
 * elements are named by backend node id, which dies with its node, so a
 * re-rendered look-alike never inherits a ref.
 */
export class CdpPageEngine implements PageEngine<number> {
  readonly layout = true;
  private world: { loaderId: string; contextId: number; script: string } | undefined;

  private readonly input: CdpTrustedInput;

  constructor(private readonly cdp: CdpConnection) {
    this.input = new CdpTrustedInput(cdp);
  }

  async load(url: string, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    const result = (await this.cdp.call("Page.navigate", { url }, timeoutMs)) as { errorText?: string };
    if (result.errorText) throw new AgentComputerError("UNAVAILABLE", `Could not load ${url}: ${result.errorText}.`);
    this.world = undefined;
    while (Date.now() < until) {
      if ((await this.readyState()) === "complete") return;
      await sleep(50);
    }
    throw new AgentComputerError(
      "TIMEOUT",
      `${url} did not finish loading within ${timeoutMs} ms; snapshot to see what did load.`,
    );
  }

  async collect(command: Record<string, unknown>, after?: number): Promise<{ page: CollectedPage; handles: number[] }> {
    const world = await this.ensureWorld();
    const target = after === undefined ? undefined : await this.resolve(after, world);
    if (after !== undefined && !target)
      throw new AgentComputerError("STALE_REF", "The element to read on from is gone; take a new browser_snapshot.");
    // One round trip: the data as JSON and the listed nodes, which deep
    // serialization names by backend node id (no DOM.describeNode per element).
    const r = (await this.cdp.call("Runtime.callFunctionOn", {
      objectId: world.script,
      functionDeclaration:
        "function (command, target) { var a = this(command, target); return a.error ? [JSON.stringify(a)] : [JSON.stringify(a.data)].concat(a.nodes); }",
      arguments: [{ value: command }, target ? { objectId: target } : { value: null }],
      serializationOptions: { serialization: "deep", maxDepth: 1 },
    })) as CallResult & { result?: { deepSerializedValue?: { value?: { type: string; value?: unknown }[] } } };
    if (r.exceptionDetails) throw new AgentComputerError("UNAVAILABLE", "The page script threw in the page.");
    if (r.result?.objectId)
      void this.cdp.call("Runtime.releaseObject", { objectId: r.result.objectId }).catch(() => undefined);
    const [head, ...nodes] = r.result?.deepSerializedValue?.value ?? [];
    const data = JSON.parse(String(head?.value ?? "{}")) as CollectedPage & { error?: { message?: string } };
    if (data.error) throw new AgentComputerError("UNAVAILABLE", `The page script failed: ${data.error.message}`);
    const handles = nodes.map((n) => (n.value as { backendNodeId: number }).backendNodeId);
    return { page: data, handles };
  }

  private async resolve(handle: number, world: { contextId: number }): Promise<string | undefined> {
    try {
      const r = (await this.cdp.call("DOM.resolveNode", {
        backendNodeId: handle,
        executionContextId: world.contextId,
      })) as {
        object: RemoteObject;
      };
      return r.object.objectId;
    } catch {
      return undefined;
    }
  }

  async perform(handle: number, command: Record<string, unknown>): Promise<Record<string, unknown>> {
    const world = await this.ensureWorld();
    const element = await this.resolve(handle, world);
    if (!element) return { error: { code: "STALE_REF", message: "gone" } };
    const script: ElementScript = async (extra) =>
      (await this.callScript(world, [{ value: { ...command, ...extra } }, { objectId: element }], true))
        .value as Record<string, unknown>;
    // The user's own input where an action is a pointer or key gesture; the script for the rest (select, scroll, focus).
    switch (command.action) {
      case "click":
        return this.input.click(script);
      case "check":
      case "uncheck":
        return this.input.click(script, command.action === "check");
      case "hover":
        return this.input.hover(script);
      case "press":
        return this.input.press(script, String(command.value));
      case "type-chars":
        return this.input.type(script, String(command.value));
      default:
        return script({});
    }
  }

  identity(handle: number): number {
    return handle;
  }

  async documentKey(): Promise<string> {
    const frame = await this.mainFrame();
    return `${frame.id}:${frame.loaderId}`;
  }

  async settle(): Promise<void> {
    // Long enough for a navigation the action started to commit; then its load, bounded.
    await sleep(150);
    const until = Date.now() + 5000;
    while (Date.now() < until && (await this.readyState()) !== "complete") await sleep(50);
  }

  private async readyState(): Promise<unknown> {
    const r = (await this.cdp
      .call("Runtime.evaluate", { expression: "document.readyState", returnByValue: true })
      .catch(() => undefined)) as CallResult | undefined;
    return r?.result?.value;
  }

  private async mainFrame(): Promise<{ id: string; loaderId: string }> {
    const tree = (await this.cdp.call("Page.getFrameTree")) as {
      frameTree: { frame: { id: string; loaderId: string } };
    };
    return tree.frameTree.frame;
  }

  private async ensureWorld(): Promise<{ loaderId: string; contextId: number; script: string }> {
    const frame = await this.mainFrame();
    if (this.world?.loaderId === frame.loaderId) return this.world;
    const created = (await this.cdp.call("Page.createIsolatedWorld", {
      frameId: frame.id,
      worldName: "agent-computer-page-browser",
    })) as { executionContextId: number };
    const fn = (await this.cdp.call("Runtime.evaluate", {
      expression: PAGE_SCRIPT,
      contextId: created.executionContextId,
    })) as CallResult;
    if (!fn.result?.objectId) throw new AgentComputerError("UNAVAILABLE", "The page script did not load in the page.");
    this.world = { loaderId: frame.loaderId, contextId: created.executionContextId, script: fn.result.objectId };
    return this.world;
  }

  private async callScript(
    world: { script: string },
    args: RemoteObject[],
    returnByValue: boolean,
  ): Promise<RemoteObject> {
    const r = (await this.cdp.call("Runtime.callFunctionOn", {
      objectId: world.script,
      functionDeclaration: "function (command, target) { return this(command, target); }",
      arguments: args,
      returnByValue,
    })) as CallResult;
    if (r.exceptionDetails) throw new AgentComputerError("UNAVAILABLE", "The page script threw in the page.");
    return r.result ?? {};
  }
}
