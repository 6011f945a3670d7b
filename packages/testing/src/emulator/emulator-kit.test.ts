import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FaultRules } from "./fault-rules.js";
import { retryWhileFreezerGivesUp } from "./freeze-gate.js";
import { ServiceRecorder } from "./service-recorder.js";

describe("FaultRules", () => {
  it("answers the matching requests in order, lets `skip` through first, and counts down", () => {
    const faults = new FaultRules();
    faults.inject({ method: "POST", path: /^\/boxes$/, status: 503, times: 2, skip: 1 });
    faults.inject({ path: /^\/boxes\/b1$/, status: 404 });
    expect(faults.pending).toBe(3);
    expect(faults.take("GET", "/boxes")).toBeUndefined();
    expect(faults.take("POST", "/boxes")).toBeUndefined();
    expect(faults.take("POST", "/boxes")?.status).toBe(503);
    expect(faults.take("DELETE", "/boxes/b1")?.status).toBe(404);
    expect(faults.take("POST", "/boxes")?.status).toBe(503);
    expect(faults.take("POST", "/boxes")).toBeUndefined();
    expect(faults.pending).toBe(0);
  });

  it("keeps a fault given until cleared", () => {
    const faults = new FaultRules();
    faults.inject({ path: /./, status: 429, times: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 5; i++) expect(faults.take("GET", "/x")?.status).toBe(429);
    faults.clear();
    expect(faults.take("GET", "/x")).toBeUndefined();
  });
});

describe("ServiceRecorder", () => {
  const recorder = () =>
    new ServiceRecorder("Example", [
      {
        name: "createThing",
        method: "POST",
        path: /^\/things$/,
        source: "example openapi.yaml#/paths/~1things/post",
        body: z.object({ name: z.string() }).strict(),
        responses: { 201: z.object({ id: z.string() }), 400: null },
      },
      {
        name: "getThing",
        method: "GET",
        path: /^\/things\/[^/]+$/,
        source: "example openapi.yaml#/paths/~1things~1{id}/get",
        query: z.object({ verbose: z.enum(["true", "false"]) }).partial(),
        responses: { 200: z.object({ id: z.string() }) },
      },
      {
        name: "deleteThing",
        method: "DELETE",
        path: /^\/things\/[^/]+$/,
        source: "example openapi.yaml#/paths/~1things~1{id}/delete",
        headers: z.looseObject({ "x-confirm": z.string().min(1) }),
        responses: { 204: null },
      },
    ]);

  it("records exchanges that keep to the definition without a violation", () => {
    const r = recorder();
    r.request("POST", "/things", { body: { name: "a" } }).answer(201, { id: "t1" });
    r.request("GET", "/things/t1", { query: new URLSearchParams("verbose=true") }).answer(200, { id: "t1" });
    expect(r.calls.map((c) => c.operation)).toEqual(["createThing", "getThing"]);
    expect(r.violations).toEqual([]);
    r.assertNoViolations();
  });

  it("checks the headers an operation names and lets the others through", () => {
    const r = recorder();
    r.request("DELETE", "/things/t1", { headers: { "x-confirm": "t1", accept: "*/*" } }).answer(204);
    expect(r.violations).toEqual([]);
    r.request("DELETE", "/things/t1", { headers: { accept: "*/*" } }).answer(204);
    expect(r.violations).toMatchObject([
      { where: "request", operation: "deleteThing", message: /^headers: x-confirm/ },
    ]);
  });

  it("counts an unknown route, a bad body or query, an unlisted status and a bad answer", () => {
    const r = recorder();
    r.request("PUT", "/things").answer(404);
    r.request("POST", "/things", { body: { name: 1, extra: true } }).answer(400);
    r.request("GET", "/things/t1", { query: new URLSearchParams("verbose=maybe"), body: {} }).answer(500);
    r.request("GET", "/things/t1").answer(200, { name: "no id" });
    expect(r.violations.map((v) => [v.where, v.operation])).toEqual([
      ["route", undefined],
      ["request", "createThing"],
      ["request", "getThing"],
      ["request", "getThing"],
      ["response", "getThing"],
      ["response", "getThing"],
    ]);
    expect(() => r.assertNoViolations()).toThrow(/6 exchanges left Example's definition/);
  });
});

// The engine's "unable to freeze" cannot be provoked at will (it takes a
// process stuck in uninterruptible I/O), so the engine's call is stood in
// for here by a function that fails with its words.
describe("retryWhileFreezerGivesUp", () => {
  const engineRefusal = new Error(
    "(HTTP code 500) server error - Cannot pause container 3f2a: OCI runtime pause failed: unable to freeze: unknown",
  );

  it("tries again while runc's freezer gives up, then gives the freeze's answer", async () => {
    let calls = 0;
    const frozen = await retryWhileFreezerGivesUp(async () => {
      calls++;
      if (calls < 3) throw engineRefusal;
      return "frozen";
    });
    expect([frozen, calls]).toEqual(["frozen", 3]);
  });

  it("passes any other refusal on at once, and the freezer's own after the last attempt", async () => {
    let calls = 0;
    const gone = new Error("(HTTP code 404) no such container");
    await expect(
      retryWhileFreezerGivesUp(async () => {
        calls++;
        throw gone;
      }),
    ).rejects.toBe(gone);
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      retryWhileFreezerGivesUp(async () => {
        calls++;
        throw engineRefusal;
      }, 2),
    ).rejects.toBe(engineRefusal);
    expect(calls).toBe(2);
  });
});
