import { describe, expect, it } from "vitest";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { checkOpContext, opContext, remainingMs, signalOf, throwIfDone } from "./op-context.js";

describe("OpContext", () => {
  it("turns timeoutMs into a deadline whose signal aborts with TIMEOUT", async () => {
    const ctx = opContext({ timeoutMs: 30 });
    expect(remainingMs(ctx)).toBeLessThanOrEqual(30);
    const signal = signalOf(ctx, "test");
    // On a loaded machine the 30 ms can pass before signalOf: the signal is then aborted already, and
    // fires no event (clean-clone run 56 waited out the test's 60 s).
    await new Promise((resolve) => (signal.aborted ? resolve(undefined) : signal.addEventListener("abort", resolve)));
    expect(AgentComputerError.is(signal.reason, "TIMEOUT")).toBe(true);
    expect(() => throwIfDone(ctx)).toThrow(expect.objectContaining({ code: "TIMEOUT" }));
  });

  it("forwards the caller's abort as ABORTED", () => {
    const controller = new AbortController();
    const signal = signalOf({ signal: controller.signal });
    expect(signal.aborted).toBe(false);
    controller.abort();
    expect(AgentComputerError.is(signal.reason, "ABORTED")).toBe(true);
    expect(() => throwIfDone({ signal: controller.signal })).toThrow(expect.objectContaining({ code: "ABORTED" }));
  });

  it("refuses malformed contexts", () => {
    expect(() => checkOpContext({ deadline: "soon" })).toThrow(/at "deadline"/);
    expect(() => checkOpContext({ lease: { key: "", token: 1 } })).toThrow(/at "lease\.key"/);
    expect(() => opContext({ timeoutMs: -1 })).toThrow(/at "timeoutMs"/);
    expect(checkOpContext(undefined)).toEqual({});
  });
});
