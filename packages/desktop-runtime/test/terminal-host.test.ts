import { describe, expect, it } from "vitest";
import { terminalHostOf } from "../computer/desktop/remote-terminals.js";
import { sessionOfRequest, TERMINAL_HOST_TAG } from "../computer/desktop/terminal-host.js";

// The terminal host's first line (computer/desktop/terminal-host.ts): the
// only request it serves is the gateway's; what a page of the display's
// browser can send (an HTTP request line) and any malformed field is
// refused before a shell starts. The real host runs on Docker in
// provider-docker's docker-display-container.test.ts.
const CONTROL = "AAAAAAAAAAAAAAAAAAAAAA";
const line = (request: Record<string, unknown>) => `${TERMINAL_HOST_TAG} ${JSON.stringify(request)}`;

describe("terminal host requests", () => {
  it("reads the gateway's probe and open requests as a session", () => {
    expect(sessionOfRequest(line({ op: "open", control: CONTROL, bot: "bot-1", home: "/home/computer" }))).toEqual({
      op: "open",
      controlId: CONTROL,
      bot: "bot-1",
      home: "/home/computer",
    });
    expect(sessionOfRequest(line({ op: "probe", control: CONTROL, bot: "b", home: "/h" }))?.op).toBe("probe");
  });

  it("refuses HTTP request lines, other tags and malformed fields", () => {
    const good = { op: "open", control: CONTROL, bot: "bot-1", home: "/home/computer" };
    for (const refused of [
      "POST / HTTP/1.1",
      "GET /terminals HTTP/1.1",
      `agent-computer-terminal/2 ${JSON.stringify(good)}`,
      `${TERMINAL_HOST_TAG} not json`,
      `${TERMINAL_HOST_TAG} null`,
      line({ ...good, op: "exec" }),
      line({ ...good, control: "short" }),
      line({ ...good, bot: "../etc" }),
      line({ ...good, home: "relative/home" }),
      line({ ...good, home: "/home\u0000x" }),
    ]) {
      expect(sessionOfRequest(refused), refused).toBeUndefined();
    }
  });

  it("reads the host's address from the display's environment", () => {
    expect(terminalHostOf("computer:6091")).toEqual({ host: "computer", port: 6091 });
    for (const bad of [undefined, "", "computer", "computer:0", "computer:70000", "http://computer:6091"]) {
      expect(terminalHostOf(bad), String(bad)).toBeUndefined();
    }
  });
});
