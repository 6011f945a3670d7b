import { ServiceRecorder } from "@agent-computer/testing/emulator";
import { describe, expect, it } from "vitest";
import * as documents from "../railway-documents.js";
import { RAILWAY_OPERATIONS } from "./railway-definition.js";
import { requestProblems } from "./railway-schema.js";

// Every document the provider sends is valid against the published
// schema's part; requests written for this test from the schema's types
// show that a wrong one is refused (none is a captured example).

const AUTH = { authorization: "Bearer railway_local_test" };

describe("railway: the definition", () => {
  it("accepts every document the provider sends", () => {
    for (const [name, document] of Object.entries(documents)) {
      expect({ name, problems: requestProblems({ query: document, variables: {} }) }).toEqual({ name, problems: [] });
    }
  });

  it("refuses an unknown field, a wrong argument and a document that does not parse", () => {
    expect(requestProblems({ query: 'query { service(id: "x") { id labels } }' })).toEqual([
      'Cannot query field "labels" on type "Service".',
    ]);
    expect(requestProblems({ query: 'mutation { volumeDelete(id: "v") }' }).join(" ")).toMatch(/Unknown argument "id"/);
    expect(requestProblems({ query: "query {" })[0]).toMatch(/does not parse/);
    expect(requestProblems({ variables: {} })).toEqual(["`query` is not a string"]);
  });

  it("records a request outside the schema as a violation, and none for one inside it", () => {
    const recorder = new ServiceRecorder("Railway", RAILWAY_OPERATIONS);
    recorder
      .request("POST", "/graphql/v2", { body: { query: documents.DEPLOYMENT, variables: { id: "d" } }, headers: AUTH })
      .answer(200, { data: { deployment: null } });
    expect(recorder.violations).toEqual([]);
    recorder
      .request("POST", "/graphql/v2", { body: { query: "query { sandboxes { id } }" }, headers: AUTH })
      .answer(200, { errors: [{ message: "no" }] });
    recorder.request("POST", "/graphql/v2", { body: { query: documents.DEPLOYMENT }, headers: {} }).answer(200, {});
    recorder.request("GET", "/ws/exec", { headers: { "sec-websocket-protocol": "railway-shell" } }).answer(101);
    expect(recorder.violations.map((v) => v.where)).toEqual(["request", "request", "request"]);
  });
});
