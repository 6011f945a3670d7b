import { describe, expect, it } from "vitest";
import { retryWithin } from "./retry-within.js";
import { redactSecrets, serviceFailure } from "./service-failure.js";

describe("serviceFailure", () => {
  const sorted = (status: number | undefined, missingMeans?: "gone" | "not-found") => {
    const error = serviceFailure({ service: "Example", what: "start a machine", status, missingMeans });
    return [error.code, error.retryable];
  };

  it("sorts a service's answers into the contract's errors", () => {
    expect(sorted(undefined)).toEqual(["UNAVAILABLE", true]);
    expect(sorted(401)).toEqual(["UNAVAILABLE", false]);
    expect(sorted(403)).toEqual(["UNAVAILABLE", false]);
    expect(sorted(404)).toEqual(["NOT_FOUND", false]);
    expect(sorted(410, "gone")).toEqual(["PROVIDER_GONE", false]);
    expect(sorted(409)).toEqual(["CONFLICT", false]);
    expect(sorted(402)).toEqual(["CONFLICT", false]);
    expect(sorted(400)).toEqual(["INVALID_ARGUMENT", false]);
    expect(sorted(422)).toEqual(["INVALID_ARGUMENT", false]);
    expect(sorted(429)).toEqual(["UNAVAILABLE", true]);
    expect(sorted(503)).toEqual(["UNAVAILABLE", true]);
    expect(sorted(418)).toEqual(["UNAVAILABLE", false]);
  });

  it("never says gone on a refused key, and keeps secrets out of the message", () => {
    const key = "sk_live_0123456789abcdef";
    const error = serviceFailure({
      service: "Example",
      what: "list machines",
      status: 401,
      detail: `bad key ${key}`,
      secrets: [key],
      missingMeans: "gone",
    });
    expect(error.code).toBe("UNAVAILABLE");
    expect(error.message).toContain("No computer is replaced");
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(key);
    const echoed = serviceFailure({ service: "Example", what: "x", status: 500, detail: `token=abcdef0123456789xyz` });
    expect(echoed.message).not.toContain("abcdef0123456789xyz");
  });

  it("redacts given secrets and token-like values", () => {
    expect(redactSecrets("a s3cret-value b", ["s3cret-value"])).toBe("a [redacted] b");
    expect(redactSecrets('{"authorization": "Bearer abcdefgh12345678"}')).not.toContain("abcdefgh12345678");
  });
});

describe("retryWithin", () => {
  it("retries transient failures until the call answers", async () => {
    let calls = 0;
    const result = await retryWithin(
      async () => {
        calls++;
        if (calls < 3) throw new Error("503");
        return "ok";
      },
      { until: Date.now() + 5_000, isTransient: () => true, failure: (e) => e, firstDelayMs: 1 },
    );
    expect(result).toBe("ok");
    expect(calls).toBe(3);
  });

  it("throws the sorted failure at once for one not worth retrying, and at the deadline for the rest", async () => {
    let calls = 0;
    const refused = retryWithin(
      async () => {
        calls++;
        throw new Error("400");
      },
      { until: Date.now() + 5_000, isTransient: () => false, failure: () => new Error("sorted") },
    );
    await expect(refused).rejects.toThrow("sorted");
    expect(calls).toBe(1);
    const started = Date.now();
    const late = retryWithin(
      async () => {
        throw new Error("503");
      },
      { until: Date.now() + 200, isTransient: () => true, failure: () => new Error("still down"), firstDelayMs: 20 },
    );
    await expect(late).rejects.toThrow("still down");
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("throws the caller's abort reason as it is", async () => {
    const controller = new AbortController();
    const reason = new Error("aborted by caller");
    const running = retryWithin(
      async () => {
        controller.abort(reason);
        throw new Error("503");
      },
      { until: Date.now() + 5_000, signal: controller.signal, isTransient: () => true, failure: (e) => e },
    );
    await expect(running).rejects.toBe(reason);
  });
});
