import { COMPUTER_LABELS } from "@agent-computer/core";
import * as grpc from "@grpc/grpc-js";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BoxdClient } from "../boxd-client.js";
import { type BoxdMessage, boxdMethod, encodeMessage } from "../boxd-definition.js";
import { labelsOfName, machineNameOf } from "../boxd-names.js";
import { BoxdTokenSource } from "../boxd-token.js";
import { vmsOfListAnswer } from "../boxd-vm-list.js";
import { undeclaredFields } from "./boxd-definition.js";
import { BoxdEmulator } from "./boxd-emulator.js";

// What needs no engine: the key exchange and the token's expiry, the
// definition checks, ListVms read without its field numbers, and names
// that carry labels. (No call here reaches a machine, so no container is made.)
describe("boxd emulator and client, without machines", () => {
  const emulator = new BoxdEmulator({
    docker: new Docker(),
    baseImage: "unused",
    apiKeys: { bxd_short: "org-a" },
    tokenLifetimeSeconds: 1,
  });
  const secrets = new Set<string>();
  let client: BoxdClient;

  beforeAll(async () => {
    await emulator.start();
    const tokens = new BoxdTokenSource({
      apiKey: "bxd_short",
      tokenUrl: emulator.tokenUrl,
      requestTimeoutMs: 5_000,
      secrets,
    });
    client = new BoxdClient({ apiUrl: emulator.apiUrl, tokens, requestTimeoutMs: 5_000, retryMs: 0, secrets });
  });
  afterAll(async () => {
    client.close();
    await emulator.close();
  });

  it("exchanges the key for a JWT, refuses it once expired, and the client exchanges again", async () => {
    const tokens = new BoxdTokenSource({
      apiKey: "bxd_short",
      tokenUrl: emulator.tokenUrl,
      requestTimeoutMs: 5_000,
      secrets,
    });
    const first = await tokens.token();
    expect(first.split(".")).toHaveLength(3);
    expect(secrets.has(first)).toBe(true);
    // A token within five minutes of its end is never sent: this one (1 s) is exchanged again each time.
    expect(await tokens.token()).not.toBe(first);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const stale = new grpc.Metadata();
    stale.set("authorization", `Bearer ${first}`);
    const raw = new grpc.Client(new URL(emulator.apiUrl).host, grpc.credentials.createInsecure());
    const method = boxdMethod("GetVm");
    const refused = await new Promise((resolve) =>
      raw.makeUnaryRequest(
        method.path,
        (message: BoxdMessage) => encodeMessage(method.requestType, message),
        (bytes: Buffer) => bytes,
        { vm_id: "x" },
        stale,
        {},
        (error) => resolve(error?.code),
      ),
    );
    raw.close();
    expect(refused).toBe(16); // UNAUTHENTICATED
    // Through the client (a fresh token): the machine is simply not there.
    await expect(client.get("ac-none", AbortSignal.timeout(5_000))).rejects.toMatchObject({ code: "PROVIDER_GONE" });
  });

  it("lists an organisation's machines; the client reads ListVms without its field numbers", async () => {
    expect(await client.list(AbortSignal.timeout(5_000))).toEqual([]);
    // Entries under any field number, the name under any, beside other fields.
    const entry = (name: string) =>
      Buffer.concat([Buffer.from([0x1a, name.length]), Buffer.from(name), Buffer.from([0x20, 0x01])]);
    const answer = Buffer.concat([Buffer.from([0x12, entry("ac-x").length]), entry("ac-x"), Buffer.from([0x18, 0x05])]);
    expect(vmsOfListAnswer(answer)).toEqual([{ texts: ["ac-x"] }]);
  });

  it("finds fields a request carries that the proto does not declare", () => {
    const getVm = boxdMethod("GetVm").requestType;
    const bytes = Buffer.concat([encodeMessage(getVm, { vm_id: "a" }), Buffer.from([0x38, 0x01])]);
    expect(undeclaredFields(getVm, bytes)).toEqual(["field 7 is not declared in GetVmRequest"]);
    expect(undeclaredFields(getVm, encodeMessage(getVm, { vm_id: "a" }))).toEqual([]);
  });

  it("names carry the labels as a DNS label, and only ours read back", () => {
    const labels = { [COMPUTER_LABELS.managed]: "true", [COMPUTER_LABELS.screenLimit]: "2", team: "blue" };
    const name = machineNameOf(labels);
    expect(name).toMatch(/^[a-z0-9-]{1,63}$/);
    expect(machineNameOf(labels)).not.toBe(name); // unique per provision
    const read = labelsOfName(name);
    expect(read?.screenLimit).toBe(2);
    expect(read?.has({ team: "blue" })).toBe(true);
    expect(read?.has({ team: "red" })).toBe(false);
    expect(labelsOfName("my-own-vm")).toBeUndefined();
  });

  it("kept every request to the definition", () => {
    emulator.recorder.assertNoViolations();
  });
});
