/** A refusal or failure of the console's API: the runtime's stable code and a message a person can act on. */
export class ConsoleApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** GET /api/<path>: its JSON, or a ConsoleApiError. */
export function apiGet(path) {
  return call(path, { method: "GET" });
}

/** POST /api/<op>/<bot>: its JSON, or a ConsoleApiError ("BOT_BUSY", "Stop the bot first: ..."). */
export function apiPost(op, botId) {
  return call(`${op}/${encodeURIComponent(botId)}`, { method: "POST" });
}

async function call(path, init) {
  let response;
  try {
    response = await fetch(`/api/${path}`, init);
  } catch (error) {
    throw new ConsoleApiError(
      "UNAVAILABLE",
      `The console server did not answer (${error.message}). Is it still running?`,
    );
  }
  const body = await response.json().catch(() => undefined);
  if (response.ok) return body;
  throw new ConsoleApiError(
    body?.code ?? "UNAVAILABLE",
    body?.message ?? `The console answered ${response.status} ${response.statusText}.`,
  );
}
