import { AgentComputerError, type desktopOptionsSchema } from "@agent-computer/core";
import type { z } from "zod";

/** How `desktop start` gets a bot's proxy: the server in argv, any credentials on stdin only. */
export interface BrowserProxy {
  /** `scheme://host:port`, never with credentials. */
  readonly server: string;
  /** For the in-computer relay; absent for a proxy without credentials (Chromium then uses `server` itself). */
  readonly credentials?: { readonly username: string; readonly password: string };
}

/**
 * Splits `DesktopOptions.proxy` into what may travel in argv and what may
 * not. Credentials come from the option's fields or the URL's userinfo;
 * they need an http(s) upstream, because the relay that carries them
 * speaks HTTP to it. No error message ever quotes the URL or a credential.
 */
export function browserProxyOf(proxy: NonNullable<z.output<typeof desktopOptionsSchema>["proxy"]>): BrowserProxy {
  const url = new URL(proxy.server);
  if (!/^(https?|socks4|socks5):$/.test(url.protocol)) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      'Invalid DesktopOptions: at "proxy.server": use http, https, socks4 or socks5.',
    );
  }
  const server = `${url.protocol}//${url.host}`;
  const username = proxy.username ?? safeDecode(url.username);
  const password = proxy.password ?? safeDecode(url.password);
  if (!username && !password) return { server };
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new AgentComputerError(
      "UNSUPPORTED",
      "Proxy credentials need an http or https proxy (the in-computer relay does not speak socks); use one without credentials or an HTTP proxy.",
    );
  }
  return { server, credentials: { username, password } };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
