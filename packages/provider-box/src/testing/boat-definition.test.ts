import { ServiceRecorder, type Violation } from "@agent-computer/testing/emulator";
import { describe, expect, it } from "vitest";
import { BOAT_OPERATIONS, BOAT_SANDBOX_ID_PATTERN, resolvesUnderFileRoots } from "./boat-definition.js";

// Requests and answers written for this test from the YAML's shapes: none is
// a captured or published example.

const ID = "bx_k7m2p9qz";
const AUTH = { authorization: "Bearer boat_local_test" };
const AT = "2026-03-14T09:26:53.589Z";
const OPERATION = `bdop_${"3e".repeat(16)}`;

const sandbox = (state = "ready") => ({
  id: ID,
  name: "emulated",
  state,
  type: "small",
  url: "https://able-baker-charlie.on.boat.dev",
  createdAt: AT,
  archiveAfter: null,
  desktopAvailable: false,
  snapshotAvailable: state === "archived",
  lastSnapshotStatus: null,
  someFutureField: { kept: true },
});
const failure = (status: number, code: string) => ({
  ok: false,
  type: "sandbox.error",
  status,
  code,
  message: `${code} here`,
  error: { code, message: `${code} here`, status, details: { hint: "none" } },
  requestId: "req_0001",
});
const deletion = (status = "pending") => ({
  id: OPERATION,
  kind: "sandbox",
  targetId: ID,
  reason: "explicit",
  status,
  stage: "removing",
  attemptCount: 0,
  requestedAt: AT,
  completedAt: status === "completed" ? AT : null,
});
const named = (status = "ready") => ({
  name: "nightly-base",
  status,
  sourceSandboxId: ID,
  ...(status === "ready" ? { snapshotId: "9b1f0c2e-1111-4222-8333-944455556666", sizeBytes: 1024 } : {}),
  createdAt: AT,
});
const started = {
  ok: true,
  type: "command.started",
  success: true,
  processId: 7,
  pid: 4242,
  command: "sleep 5",
  startedAt: AT,
};

function violationsOf(run: (r: ServiceRecorder) => void): Violation[] {
  const recorder = new ServiceRecorder("Boat", BOAT_OPERATIONS);
  run(recorder);
  return recorder.violations;
}

describe("BOAT_OPERATIONS", () => {
  it("covers the operations an emulator serves, each citing boat-v1.yaml", () => {
    expect(BOAT_OPERATIONS.map((op) => op.name).sort()).toEqual(
      [
        "command",
        "commandStatus",
        "create",
        "deleteNamedSnapshot",
        "deleteSandbox",
        "get",
        "getDeletionOperation",
        "getNamedSnapshot",
        "hostPort",
        "listNamedSnapshots",
        "readFile",
        "resume",
        "sandboxes",
        "saveNamedSnapshot",
        "stop",
        "update",
        "writeFile",
      ].sort(),
    );
    for (const op of BOAT_OPERATIONS) expect(op.source).toMatch(new RegExp(`^boat-v1\\.yaml op:${op.name} \\(`));
    expect(BOAT_SANDBOX_ID_PATTERN.test(ID)).toBe(true);
    expect(BOAT_SANDBOX_ID_PATTERN.test("bx_k7m2p9q0")).toBe(false);
  });

  it("finds no violation in well-formed requests and answers of every operation", () => {
    const recorder = new ServiceRecorder("Boat", BOAT_OPERATIONS);
    const q = (text: string) => new URLSearchParams(text);
    const call = (
      method: string,
      path: string,
      input: Parameters<ServiceRecorder["request"]>[2],
      status: number,
      body?: unknown,
    ) => recorder.request(method, path, { ...input, headers: { ...AUTH, ...input?.headers } }).answer(status, body);

    call(
      "POST",
      "/sandboxes",
      {
        headers: { "idempotency-key": "a".repeat(255) },
        body: { type: "large", ttlSeconds: null, env: { API_URL: "http://x" }, setupScript: "echo hi" },
      },
      202,
      {
        ok: true,
        type: "sandbox.created",
        status: "provisioning",
        ttlSeconds: null,
        sandbox: sandbox("provisioning"),
      },
    );
    call("POST", "/sandboxes", {}, 429, failure(429, "rate_limited"));
    call("GET", "/sandboxes", { query: q("limit=200&sort=asc&cursor=abc&state=ready,idle") }, 200, {
      ok: true,
      type: "sandbox.list",
      sandboxes: [sandbox(), sandbox("archived")],
      pageInfo: { nextCursor: null, hasMore: false, limit: 200 },
    });
    call("GET", `/sandboxes/${ID}`, {}, 200, { ok: true, type: "sandbox.info", sandbox: sandbox() });
    call("GET", `/sandboxes/${ID}`, {}, 200, {
      ok: true,
      type: "sandbox.info",
      sandbox: { id: ID, state: "cancelled", error: "no machine" },
    });
    call(
      "PATCH",
      `/sandboxes/${ID}`,
      { body: { name: "n".repeat(120), ttlSeconds: 600, subdomain: "quiet-harbor" } },
      200,
      {
        ok: true,
        type: "sandbox.updated",
        sandbox: sandbox(),
      },
    );
    call("POST", `/sandboxes/${ID}/stop`, {}, 202, {
      ok: true,
      type: "sandbox.stopping",
      id: ID,
      status: "archiving",
      sandbox: sandbox("archiving"),
    });
    call("POST", `/sandboxes/${ID}/stop`, { body: { force: true } }, 400, failure(400, "stop_failed"));
    call("POST", `/sandboxes/${ID}/resume`, { body: { ttlSeconds: 3600, type: "default" } }, 202, {
      ok: true,
      type: "sandbox.resuming",
      id: ID,
      status: "resuming",
      sandbox: null,
    });
    call("DELETE", `/sandboxes/${ID}`, { headers: { "x-ascii-confirm-delete": ID } }, 202, {
      ok: true,
      type: "sandbox.deleting",
      operation: deletion(),
    });
    call("GET", `/deletion-operations/${OPERATION}`, {}, 200, {
      ok: true,
      type: "deletion.operation",
      operation: deletion("completed"),
    });
    call(
      "POST",
      `/sandboxes/${ID}/commands`,
      { body: { command: "ls", cwd: "project/src", timeoutSeconds: 600 } },
      200,
      {
        ok: true,
        type: "command.finished",
        success: true,
        exitCode: 0,
        stdout: "a\n",
        stderr: "",
        timedOut: false,
      },
    );
    call("POST", `/sandboxes/${ID}/commands`, { body: { command: "sleep 5", detached: true } }, 200, started);
    call("POST", `/sandboxes/${ID}/commands`, { body: { command: "echo hi", stream: true } }, 200, [
      { type: "started" },
      { type: "stdout", data: "hi\n" },
      { type: "exit", exitCode: 0, success: true, timedOut: false },
    ]);
    call("GET", `/sandboxes/${ID}/commands/7`, { query: q("tailBytes=8388608") }, 200, {
      ok: true,
      type: "command.status",
      success: true,
      processId: 7,
      status: "exited",
      running: false,
      exitCode: 0,
      stdout: "",
      stderr: "",
    });
    call("GET", `/sandboxes/${ID}/commands/7`, {}, 409, failure(409, "machine_not_running"));
    call("GET", `/sandboxes/${ID}/files`, { query: q("path=notes/today.txt&encoding=base64") }, 200, {
      ok: true,
      type: "file.read",
      success: true,
      path: "/home/user/notes/today.txt",
      encoding: "base64",
      size: 3,
      content: "aGk=",
    });
    call("PUT", `/sandboxes/${ID}/files`, { body: { path: "/tmp/../home/user/out.txt", content: "hi" } }, 200, {
      ok: true,
      type: "file.written",
      success: true,
      path: "/home/user/out.txt",
      encoding: "utf8",
      size: 2,
    });
    call("POST", `/sandboxes/${ID}/host`, { body: { port: 3000, public: false } }, 200, {
      ok: true,
      type: "port.hosted",
      success: true,
      port: 3000,
      url: "https://able-baker-charlie-3000.on.boat.dev?_token=t",
      isProtected: true,
      access: "private",
    });
    call("POST", "/named-snapshots", { body: { sandboxId: ID, name: "nightly-base" } }, 202, {
      ok: true,
      type: "snapshot.named.saving",
      status: "saving",
      snapshot: named("saving"),
    });
    call("GET", "/named-snapshots", {}, 200, {
      ok: true,
      type: "snapshot.named.list",
      snapshots: [named(), named("saving")],
    });
    call("GET", "/named-snapshots/nightly-base", {}, 200, { ok: true, type: "snapshot.named.info", snapshot: named() });
    call("DELETE", "/named-snapshots/nightly-base", {}, 200, {
      ok: true,
      type: "snapshot.named.deleted",
      name: "nightly-base",
      status: "deleted",
    });
    call("DELETE", "/named-snapshots/nightly-base", {}, 404, failure(404, "not_found"));

    recorder.assertNoViolations();
    expect(new Set(recorder.calls.map((c) => c.operation)).size).toBe(BOAT_OPERATIONS.length);
  });

  it("resolves file paths from /home/user and folds `..` before checking the roots", () => {
    expect(resolvesUnderFileRoots("a/b")).toBe(true);
    expect(resolvesUnderFileRoots("/tmp/x")).toBe(true);
    expect(resolvesUnderFileRoots("/home/user2/x")).toBe(false);
    expect(resolvesUnderFileRoots("/tmpfile")).toBe(false);
    expect(resolvesUnderFileRoots("../../etc/passwd")).toBe(false);
    expect(resolvesUnderFileRoots("/home/user/../../etc")).toBe(false);
  });

  const cases: { what: string; where: Violation["where"]; message: RegExp; run: (r: ServiceRecorder) => void }[] = [
    {
      what: "a DELETE without x-ascii-confirm-delete",
      where: "request",
      message: /^headers: x-ascii-confirm-delete: /,
      run: (r) =>
        r
          .request("DELETE", `/sandboxes/${ID}`, { headers: AUTH })
          .answer(409, failure(409, "delete_confirmation_required")),
    },
    {
      what: "a DELETE with an empty x-ascii-confirm-delete",
      where: "request",
      message: /^headers: x-ascii-confirm-delete: /,
      run: (r) =>
        r
          .request("DELETE", `/sandboxes/${ID}`, { headers: { ...AUTH, "x-ascii-confirm-delete": "" } })
          .answer(409, failure(409, "delete_confirmation_required")),
    },
    {
      what: "a request without a bearer token",
      where: "request",
      message: /^headers: authorization: /,
      run: (r) =>
        r
          .request("GET", `/sandboxes/${ID}`, { headers: { authorization: "Basic dTpw" } })
          .answer(401, failure(401, "unauthorized")),
    },
    {
      what: "a PATCH name of 121 characters",
      where: "request",
      message: /^body: name: Too big/,
      run: (r) =>
        r
          .request("PATCH", `/sandboxes/${ID}`, { headers: AUTH, body: { name: "n".repeat(121) } })
          .answer(400, failure(400, "invalid_name")),
    },
    {
      what: 'a command with cwd "/"',
      where: "request",
      message: /^body: cwd: /,
      run: (r) =>
        r
          .request("POST", `/sandboxes/${ID}/commands`, { headers: AUTH, body: { command: "ls", cwd: "/" } })
          .answer(200, started),
    },
    {
      what: "a command whose cwd climbs out of the work directory",
      where: "request",
      message: /^body: cwd: /,
      run: (r) =>
        r
          .request("POST", `/sandboxes/${ID}/commands`, { headers: AUTH, body: { command: "ls", cwd: "a/../../x" } })
          .answer(200, started),
    },
    {
      what: "a command with timeoutSeconds 601",
      where: "request",
      message: /^body: timeoutSeconds: Too big/,
      run: (r) =>
        r
          .request("POST", `/sandboxes/${ID}/commands`, {
            headers: AUTH,
            body: { command: "true", timeoutSeconds: 601 },
          })
          .answer(400, failure(400, "invalid_timeout")),
    },
    {
      what: "a readFile path /etc/passwd",
      where: "request",
      message: /^query: path: .*\/home\/user or \/tmp/,
      run: (r) =>
        r
          .request("GET", `/sandboxes/${ID}/files`, { headers: AUTH, query: new URLSearchParams("path=/etc/passwd") })
          .answer(400, failure(400, "invalid_path")),
    },
    {
      what: "a readFile path ../../etc/passwd",
      where: "request",
      message: /^query: path: .*\/home\/user or \/tmp/,
      run: (r) =>
        r
          .request("GET", `/sandboxes/${ID}/files`, {
            headers: AUTH,
            query: new URLSearchParams("path=../../etc/passwd"),
          })
          .answer(400, failure(400, "invalid_path")),
    },
    {
      what: "a query parameter the operation does not take",
      where: "request",
      message: /Unrecognized key: "page"/,
      run: (r) =>
        r
          .request("GET", "/sandboxes", { headers: AUTH, query: new URLSearchParams("limit=50&page=2") })
          .answer(200, { ok: true, type: "sandbox.list", sandboxes: [] }),
    },
    {
      what: "a limit of 0",
      where: "request",
      message: /^query: limit: /,
      run: (r) =>
        r
          .request("GET", "/sandboxes", { headers: AUTH, query: new URLSearchParams("limit=0") })
          .answer(400, failure(400, "invalid_limit")),
    },
    {
      what: "a commandStatus path with a non-integer processId",
      where: "route",
      message: /^no operation of Boat is GET/,
      run: (r) =>
        r.request("GET", `/sandboxes/${ID}/commands/1.5`, { headers: AUTH }).answer(404, failure(404, "not_found")),
    },
    {
      what: "a commandStatus path with processId 0",
      where: "route",
      message: /^no operation of Boat is GET/,
      run: (r) =>
        r.request("GET", `/sandboxes/${ID}/commands/0`, { headers: AUTH }).answer(404, failure(404, "not_found")),
    },
    {
      what: "a command-started answer whose processId is a string",
      where: "response",
      message: /^body of 200: processId: .*expected number/,
      run: (r) =>
        r
          .request("POST", `/sandboxes/${ID}/commands`, { headers: AUTH, body: { command: "sleep 5", detached: true } })
          .answer(200, { ...started, processId: "7" }),
    },
    {
      what: "a named snapshot with `state` instead of `status`",
      where: "response",
      message: /^body of 200: snapshot\.status: /,
      run: (r) => {
        const { status: _status, ...rest } = named();
        r.request("GET", "/named-snapshots/nightly-base", { headers: AUTH }).answer(200, {
          ok: true,
          type: "snapshot.named.info",
          snapshot: { ...rest, state: "ready" },
        });
      },
    },
    {
      what: "a sandbox in a state the enum does not have",
      where: "response",
      message: /^body of 200: sandbox\.state: /,
      run: (r) =>
        r
          .request("GET", `/sandboxes/${ID}`, { headers: AUTH })
          .answer(200, { ok: true, type: "sandbox.info", sandbox: sandbox("stopped") }),
    },
    {
      what: "an answer status the operation does not list",
      where: "response",
      message: /^status 404 is not an answer/,
      run: (r) => r.request("GET", "/named-snapshots", { headers: AUTH }).answer(404, failure(404, "not_found")),
    },
  ];

  it.each(cases)("refuses $what", ({ where, message, run }) => {
    const violations = violationsOf(run);
    expect(violations).toHaveLength(1);
    expect(violations[0]?.where).toBe(where);
    expect(violations[0]?.message).toMatch(message);
  });
});
