// The legacy Box base (`https://ascii.dev/api/box/v1`), which still
// answers: the same service before its rename, with `/boxes` paths and
// `box` keys. boat-v1.yaml's recorded answers (crates/boat/fixtures/README.md)
// were captured there and ported with these renames, so the emulator
// translates a legacy request into Boat's terms (what its recorder
// checks) and Boat's answer back.

type Json = Record<string, unknown>;

/** Boat's key for each legacy one, as the fixtures' port renamed them. */
const RENAMED: Record<string, string> = {
  sandbox: "box",
  sandboxes: "boxes",
  sourceSandboxId: "sourceBoxId",
  sandboxId: "boxId",
};

export const legacyRequest = {
  /** `/boxes…` as Boat's `/sandboxes…`. */
  path(path: string, legacy: boolean): string {
    return legacy ? path.replace(/^\/boxes(?=\/|$)/, "/sandboxes") : path;
  },
  /** A legacy body's keys (`boxId`) as Boat's (`sandboxId`). */
  body(body: unknown): unknown {
    if (!body || typeof body !== "object" || Array.isArray(body)) return body;
    const back = Object.fromEntries(Object.entries(RENAMED).map(([boat, box]) => [box, boat]));
    return Object.fromEntries(Object.entries(body as Json).map(([k, v]) => [back[k] ?? k, v]));
  },
};

/** Boat's answer in the legacy base's words: renamed keys, `box.*` types. */
export function legacyAnswer(answer: unknown): unknown {
  if (Array.isArray(answer)) return answer.map(legacyAnswer);
  if (!answer || typeof answer !== "object") return answer;
  return Object.fromEntries(
    Object.entries(answer as Json).map(([key, value]) => [
      RENAMED[key] ?? key,
      key === "type" && typeof value === "string" ? value.replace(/^sandbox\./, "box.") : legacyAnswer(value),
    ]),
  );
}
