import { describe, expect, it } from "vitest";
import { gatewayUrl } from "../src/desktop/gateway-url.js";

describe("gateway URLs from a machine's portUrl", () => {
  it("keeps a route's own path and query string (signed preview URLs, ?_token= private routes)", () => {
    const url = gatewayUrl(
      "https://6080-box.example.test/preview/abc/?_token=t0k3n&x=1",
      "/screens/AAAAAAAAAAAAAAAAAAAAAA",
    );
    expect(url).toBe("wss://6080-box.example.test/preview/abc/screens/AAAAAAAAAAAAAAAAAAAAAA?_token=t0k3n&x=1");
  });

  it("turns http into ws and https into wss, on a bare host too", () => {
    expect(gatewayUrl("http://127.0.0.1:32768", "/service")).toBe("ws://127.0.0.1:32768/service");
    expect(gatewayUrl("https://host.test", "/service")).toBe("wss://host.test/service");
  });
});
