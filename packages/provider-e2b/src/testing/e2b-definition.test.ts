import { ServiceRecorder, type Violation } from "@agent-computer/testing/emulator";
import { describe, expect, it } from "vitest";
import { envelope } from "./connect-envelope.js";
import { E2B_CONTROL_PLANE_OPERATIONS, E2B_OPERATIONS, ENVD_OPERATIONS, shortSandboxId } from "./e2b-definition.js";

// Requests and answers written for this test from the definitions' shapes:
// none is a captured or published example.

const ID = "iabcdefghij0123456789";
const KEY = { "x-api-key": "e2b_test" };
const JSON_KEY = { ...KEY, "content-type": "application/json" };
const AT = "2026-03-14T09:26:53.589Z";
const UNARY = { "content-type": "application/json", "connect-protocol-version": "1", "x-access-token": "t" };
const STREAM = { "content-type": "application/connect+json", "keepalive-ping-interval": "50", "x-access-token": "t" };

const created = { templateID: "tpl", sandboxID: ID, clientID: "6532622b", envdVersion: "0.6.13", envdAccessToken: "t" };
const listed = {
  templateID: "tpl",
  sandboxID: ID,
  clientID: "6532622b",
  startedAt: AT,
  endAt: AT,
  cpuCount: 2,
  memoryMB: 4096,
  diskSizeMB: 10240,
  metadata: { a: "b" },
  state: "running",
  envdVersion: "0.6.13",
};
const apiError = (code: number) => ({ code, message: "no" });
const stream = (...events: object[]) => ({ messages: events.map((event) => ({ event })), endOfStream: {} });

type Input = Parameters<ServiceRecorder["request"]>[2];

function violationsOf(run: (call: (m: string, p: string, i: Input, s: number, b?: unknown) => void) => void) {
  const recorder = new ServiceRecorder("E2B", E2B_OPERATIONS);
  run((method, path, input, status, body) => recorder.request(method, path, input).answer(status, body));
  return recorder.violations;
}

/** Exactly one violation, at `where`, its message matching. */
function expectOne(violations: Violation[], where: Violation["where"], message: RegExp) {
  expect(violations).toHaveLength(1);
  expect(violations[0]?.where).toBe(where);
  expect(violations[0]?.message).toMatch(message);
}

describe("E2B_OPERATIONS", () => {
  it("names each operation once and cites its source", () => {
    const names = E2B_OPERATIONS.map((op) => op.name);
    expect(new Set(names).size).toBe(names.length);
    for (const op of E2B_CONTROL_PLANE_OPERATIONS) expect(op.source).toMatch(/openapi\.yml|e2b 2\.51\.0/);
    for (const op of ENVD_OPERATIONS) expect(op.source).toMatch(/envd\.yaml|process\.proto|filesystem\.proto/);
    expect(shortSandboxId(ID)).toBe(ID);
    expect(shortSandboxId(`${ID}-6532622b`)).toBe(ID);
    expect(shortSandboxId(`${ID}-a-b`)).toBeUndefined();
    expect(shortSandboxId("UPPER")).toBeUndefined();
  });

  it("finds no violation in well-formed control-plane exchanges", () => {
    const violations = violationsOf((call) => {
      const create = {
        templateID: "tpl",
        timeout: 300,
        autoPause: true,
        metadata: { a: "b" },
        envVars: { HOME: "/home/user/x" },
        allow_internet_access: true,
      };
      call("POST", "/v2/sandboxes", { headers: JSON_KEY, body: create }, 201, created);
      call("POST", "/v2/sandboxes", { headers: JSON_KEY, body: { templateID: "missing" } }, 404, apiError(404));
      const v1 = { ...create, timeout: 0, secure: true, nodeID: "n1" };
      call("POST", "/sandboxes", { headers: JSON_KEY, body: v1 }, 201, { ...created, domain: null });
      const query = new URLSearchParams({ metadata: "a=b", state: "running,paused", limit: "100", order: "asc" });
      call("GET", "/v2/sandboxes", { headers: KEY, query }, 200, [listed, { ...listed, state: "paused" }]);
      const lifecycle = { autoResume: false, onTimeout: "pause" };
      call("GET", `/sandboxes/${ID}`, { headers: KEY }, 200, { ...listed, lifecycle, envdAccessToken: "t" });
      call("GET", `/sandboxes/${ID}-6532622b`, { headers: KEY }, 404, apiError(404));
      call("DELETE", `/sandboxes/${ID}`, { headers: KEY }, 204);
      call("POST", `/sandboxes/${ID}/pause`, { headers: KEY }, 204);
      call("POST", `/sandboxes/${ID}/pause`, { headers: JSON_KEY, body: { sync: false } }, 409, apiError(409));
      call("POST", `/v2/sandboxes/${ID}/connect`, { headers: KEY }, 201, created);
      call("POST", `/v2/sandboxes/${ID}/connect`, { headers: JSON_KEY, body: { timeout: 60 } }, 200, created);
      call(
        "POST",
        `/sandboxes/${ID}/connect`,
        { headers: JSON_KEY, body: { timeout: 300, secure: true } },
        200,
        created,
      );
      call("POST", `/sandboxes/${ID}/timeout`, { headers: JSON_KEY, body: { timeout: 0 } }, 204);
      const template = { name: "computer", tags: [], cpuCount: 2, memoryMB: 4096 };
      const requested = { templateID: "t1", buildID: "b1", public: false, aliases: [], names: ["computer"], tags: [] };
      call("POST", "/v3/templates", { headers: JSON_KEY, body: template }, 202, requested);
      const trigger = { fromImage: "img:1", fromImageRegistry: { type: "registry", username: "u", password: "p" } };
      call("POST", "/v2/templates/t1/builds/b1", { headers: JSON_KEY, body: { ...trigger, steps: [] } }, 202);
      const info = { templateID: "t1", buildID: "b1", status: "ready", logs: ["x"] };
      const logEntries = [{ timestamp: AT, level: "info", message: "x" }];
      const statusQuery = { headers: KEY, query: new URLSearchParams({ logsOffset: "0" }) };
      call("GET", "/templates/t1/builds/b1/status", statusQuery, 200, { ...info, logEntries });
    });
    expect(violations).toEqual([]);
  });

  it("finds no violation in well-formed envd exchanges", () => {
    const violations = violationsOf((call) => {
      call("GET", "/health", {}, 204);
      call("GET", "/health", {}, 502, { sandboxId: ID, message: "The sandbox was not found", code: 502 });
      const files = new URLSearchParams({ path: "/home/user/a", username: "root" });
      call("GET", "/files", { query: files, headers: { "x-access-token": "t" } }, 200);
      call("GET", "/files", { query: files }, 404, { code: 404, message: "path '/x' does not exist" });
      const upload = { headers: { "content-type": "application/octet-stream" }, query: files };
      call("POST", "/files", upload, 200, [{ path: "/home/user/a", name: "a", type: "file" }]);
      const form = { headers: { "content-type": "multipart/form-data; boundary=x" }, query: new URLSearchParams() };
      call("POST", "/files", form, 507, { code: 507, message: "not enough disk space available" });
      const start = { process: { cmd: "sh", args: ["-c", "true"], envs: { A: "b" }, cwd: "/" }, stdin: false };
      const auth = { ...STREAM, authorization: `Basic ${Buffer.from("user:").toString("base64")}` };
      const run = stream(
        { start: { pid: 42 } },
        { data: { stdout: "aGk=" } },
        { keepalive: {} },
        { end: { exitCode: -1, status: "signal: killed", error: "signal: killed" } },
      );
      call("POST", "/process.Process/Start", { headers: auth, body: start }, 200, run);
      const refused = { messages: [], endOfStream: { error: { code: "invalid_argument", message: "cwd '/x'" } } };
      call("POST", "/process.Process/Start", { headers: STREAM, body: start }, 200, refused);
      const ended = stream({ start: { pid: 42 } }, { end: { exited: true, status: "exit status 0" } });
      call("POST", "/process.Process/Connect", { headers: STREAM, body: { process: { pid: 42 } } }, 200, ended);
      const listing = { processes: [{ config: { cmd: "sleep", args: ["9"] }, pid: 42, tag: "t" }] };
      call("POST", "/process.Process/List", { headers: UNARY, body: {} }, 200, listing);
      const input = { process: { pid: 42 }, input: { stdin: "aGk=" } };
      call("POST", "/process.Process/SendInput", { headers: UNARY, body: input }, 200, {});
      call("POST", "/process.Process/CloseStdin", { headers: UNARY, body: { process: { tag: "t" } } }, 200, {});
      const signal = { process: { pid: "42" }, signal: "SIGNAL_SIGKILL" };
      call("POST", "/process.Process/SendSignal", { headers: UNARY, body: signal }, 404, { code: "not_found" });
      call("POST", "/process.Process/SendInput", { headers: UNARY, body: input }, 401, { code: 401, message: "x" });
      call("POST", "/filesystem.Filesystem/Stat", { headers: UNARY, body: { path: "/" } }, 200, { entry: {} });
    });
    expect(violations).toEqual([]);
  });

  it("reports each malformed control-plane exchange once", () => {
    const body = { templateID: "tpl" };
    // No API key.
    let v = violationsOf((call) => call("POST", "/v2/sandboxes", { headers: {}, body }, 201, created));
    expectOne(v, "request", /x-api-key/);
    // A misspelt field (the SDK's option name, not the API's).
    v = violationsOf((call) =>
      call("POST", "/v2/sandboxes", { headers: JSON_KEY, body: { ...body, envs: {} } }, 201, created),
    );
    expectOne(v, "request", /envs/);
    // v2 has no `secure`; timeout 0 is below its minimum of 1.
    v = violationsOf((call) =>
      call("POST", "/v2/sandboxes", { headers: JSON_KEY, body: { ...body, timeout: 0 } }, 400, apiError(400)),
    );
    expectOne(v, "request", /timeout/);
    v = violationsOf((call) =>
      call("POST", "/v2/sandboxes", { headers: JSON_KEY, body: { ...body, secure: true } }, 201, created),
    );
    expectOne(v, "request", /secure/);
    // The v1 connect requires a timeout.
    v = violationsOf((call) => call("POST", `/sandboxes/${ID}/connect`, { headers: JSON_KEY, body: {} }, 201, created));
    expectOne(v, "request", /timeout/);
    // The answers must carry the required clientID.
    const { clientID: _c, ...noClient } = created;
    v = violationsOf((call) => call("POST", "/v2/sandboxes", { headers: JSON_KEY, body }, 201, noClient));
    expectOne(v, "response", /clientID/);
    const { clientID: _l, ...listedWithout } = listed;
    v = violationsOf((call) => call("GET", "/v2/sandboxes", { headers: KEY }, 200, [listedWithout]));
    expectOne(v, "response", /clientID/);
    // limit above 100, a state that is none.
    v = violationsOf((call) =>
      call("GET", "/v2/sandboxes", { headers: KEY, query: new URLSearchParams({ limit: "101" }) }, 200, []),
    );
    expectOne(v, "request", /limit/);
    v = violationsOf((call) =>
      call("GET", "/v2/sandboxes", { headers: KEY, query: new URLSearchParams({ state: "running,gone" }) }, 200, []),
    );
    expectOne(v, "request", /state/);
    // A status the definition does not list, an error without its message.
    v = violationsOf((call) => call("DELETE", `/sandboxes/${ID}`, { headers: KEY }, 200));
    expectOne(v, "response", /status 200/);
    v = violationsOf((call) => call("GET", `/sandboxes/${ID}`, { headers: KEY }, 404, { code: 404 }));
    expectOne(v, "response", /message/);
    // A path the service does not have.
    v = violationsOf((call) => call("POST", `/sandboxes/${ID}/resume-now`, { headers: KEY }, 404));
    expectOne(v, "route", /no operation/);
  });

  it("reports each malformed envd exchange once", () => {
    const files = new URLSearchParams({ path: "a" });
    // /files takes the user from the `username` query parameter: `user` is no parameter of it.
    let v = violationsOf((call) => call("GET", "/files", { query: new URLSearchParams({ user: "root" }) }, 200));
    expectOne(v, "request", /user/);
    v = violationsOf((call) =>
      call("POST", "/files", { query: files, headers: { "content-type": "text/plain" } }, 200, []),
    );
    expectOne(v, "request", /content-type/);
    v = violationsOf((call) =>
      call("POST", "/files", { query: files, headers: { "content-type": "application/octet-stream" } }, 200, [{}]),
    );
    expectOne(v, "response", /path|name|type/);
    v = violationsOf((call) => call("GET", "/files", { query: files }, 404, { message: "gone" }));
    expectOne(v, "response", /code/);
    const start = { process: { cmd: "true" } };
    // A unary content type on a stream; a user that is not Basic auth.
    v = violationsOf((call) =>
      call("POST", "/process.Process/Start", { headers: UNARY, body: start }, 200, stream({ start: { pid: 1 } })),
    );
    expectOne(v, "request", /content-type/);
    v = violationsOf((call) =>
      call(
        "POST",
        "/process.Process/Start",
        { headers: { ...STREAM, authorization: "Bearer x" }, body: start },
        200,
        stream({ start: { pid: 1 } }),
      ),
    );
    expectOne(v, "request", /Basic/);
    v = violationsOf((call) =>
      call("POST", "/process.Process/Start", { headers: STREAM, body: { process: {} } }, 200, stream()),
    );
    expect(v.map((x) => x.where).sort()).toEqual(["request", "response"]);
    // Streams: start first, end last; a stream without events ends with an error.
    v = violationsOf((call) =>
      call(
        "POST",
        "/process.Process/Start",
        { headers: STREAM, body: start },
        200,
        stream({ data: { stdout: "aGk=" } }, { start: { pid: 1 } }),
      ),
    );
    expectOne(v, "response", /first event/);
    v = violationsOf((call) =>
      call(
        "POST",
        "/process.Process/Start",
        { headers: STREAM, body: start },
        200,
        stream({ start: { pid: 1 } }, { end: { exited: true } }, { keepalive: {} }),
      ),
    );
    expectOne(v, "response", /end must be the last/);
    v = violationsOf((call) => call("POST", "/process.Process/Start", { headers: STREAM, body: start }, 200, stream()));
    expectOne(v, "response", /without events/);
    // An end whose exit code is no sint32; a selector with neither pid nor tag.
    v = violationsOf((call) =>
      call(
        "POST",
        "/process.Process/Connect",
        { headers: STREAM, body: { process: { pid: 1 } } },
        200,
        stream({ start: { pid: 1 } }, { end: { exitCode: "137" } }),
      ),
    );
    expectOne(v, "response", /messages/);
    v = violationsOf((call) =>
      call("POST", "/process.Process/CloseStdin", { headers: UNARY, body: { process: {} } }, 200, {}),
    );
    expectOne(v, "request", /process/);
    // A Connect error code that is none, and an answer for an RPC the emulator does not serve.
    const signal = { process: { pid: 1 }, signal: "SIGNAL_SIGKILL" };
    v = violationsOf((call) =>
      call("POST", "/process.Process/SendSignal", { headers: UNARY, body: signal }, 404, { code: "gone" }),
    );
    expectOne(v, "response", /code/);
    v = violationsOf((call) =>
      call("POST", "/filesystem.Filesystem/WatchDir", { headers: STREAM, body: { path: "/" } }, 404),
    );
    expectOne(v, "response", /status 404/);
    expect(envelope({}).length).toBe(7);
  });
});
