import type { ScreenEndpoint } from "@agent-computer/core";
import { expect } from "vitest";
import { RfbTestClient } from "./rfb-test-client.js";

/**
 * What a noVNC viewer gets from a screen capability: RFB 3.8, a ServerInit
 * at the desktop's `size`, and a frame when asked; the connection closed
 * after. The screens suites of every provider check this the same way.
 */
export async function expectRfbScreen(
  endpoint: Pick<ScreenEndpoint, "url"> & { token?: string },
  size: { width: number; height: number },
): Promise<void> {
  const client = await RfbTestClient.open(endpoint);
  try {
    const init = await client.handshake();
    expect(init.banner).toBe("RFB 003.008\n");
    expect({ width: init.width, height: init.height }).toEqual(size);
    expect(await client.requestUpdate()).toBe(0);
  } finally {
    client.close();
  }
}
