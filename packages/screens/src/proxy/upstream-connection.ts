import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Duplex } from "node:stream";
import {
  capabilityTokenHash,
  GATEWAY_CHALLENGE_HEADER,
  GATEWAY_PROOF_HEADER,
  gatewayAuthorizationHeader,
  gatewayProof,
  gatewayProofMatches,
  newGatewayNonce,
  parseGatewayChallenge,
} from "@agent-computer/core";
import { WebSocket } from "ws";
import type { SealedCapability } from "../capability/sealed-capability.js";
import type { BridgeFrame } from "./screen-bridge.js";

export type UpstreamFailure = {
  ok: false;
  /** The gateway's HTTP status when it answered one. */
  status: number | null;
  clientGone: boolean;
  /** The gateway did not prove it holds the capability: nothing was sent to it. */
  unproven?: boolean;
};

/** A websocket to the gateway, while and after it connects. */
export interface UpstreamConnection {
  /** Ends the attempt or the socket, whichever stage it is in (an abort mid-connect). */
  terminate(): void;
  /** Gateway frames that arrive before the browser's upgrade finishes. */
  readonly early: BridgeFrame[];
  /** Open, with the proven socket; or why not. */
  readonly connected: Promise<{ ok: true; ws: WebSocket } | UpstreamFailure>;
}

/**
 * Connects to a capability's gateway endpoint for the browser on `socket`,
 * which may leave meanwhile. The gateway proves it holds the capability
 * before anything is sent to it (core's gateway-proof.ts): a process that
 * took the gateway's port gets neither the token nor the person's input.
 */
export function connectUpstream(
  endpoint: SealedCapability["endpoint"],
  socket: Duplex,
  timeoutMs: number,
  onResponse: (stage: "challenge" | "upgrade", status: number) => void = () => {},
): UpstreamConnection {
  const early: BridgeFrame[] = [];
  let ws: WebSocket | undefined;
  let ended = false;
  let endChallenge: (() => void) | undefined;
  const terminate = () => {
    ended = true;
    endChallenge?.();
    ws?.terminate();
  };
  const connected = new Promise<{ ok: true; ws: WebSocket } | UpstreamFailure>((resolve) => {
    let settled = false;
    const settle = (result: { ok: true; ws: WebSocket } | UpstreamFailure) => {
      if (settled) return;
      settled = true;
      socket.off("close", onClientGone);
      resolve(result);
    };
    const onClientGone = () => {
      terminate();
      settle({ ok: false, status: null, clientGone: true });
    };
    socket.once("close", onClientGone);
    const deadline = Date.now() + timeoutMs;
    endChallenge = fetchChallenge(endpoint.url, timeoutMs, onResponse, (answer) => {
      endChallenge = undefined;
      if (ended) return settle({ ok: false, status: null, clientGone: false });
      if ("status" in answer) return settle({ ok: false, status: answer.status, clientGone: false });
      const hash = capabilityTokenHash(endpoint.token);
      const nonce = newGatewayNonce();
      const { challenge } = answer;
      const proof = gatewayProof(hash, "client", challenge, nonce);
      const upstream = new WebSocket(endpoint.url, {
        headers: { Authorization: gatewayAuthorizationHeader({ nonce, challenge, proof }) },
        perMessageDeflate: false,
        followRedirects: false,
        handshakeTimeout: Math.max(1, deadline - Date.now()),
        maxPayload: 64 * 1024 * 1024,
      });
      ws = upstream;
      let status: number | null = null;
      let unproven = false;
      upstream.on("message", (data, binary) =>
        early.push({ data: Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer), binary }),
      );
      upstream.once("upgrade", (res) => {
        onResponse("upgrade", res.statusCode ?? 101);
        const expected = gatewayProof(hash, "gateway", nonce, challenge);
        if (!gatewayProofMatches(expected, res.headers[GATEWAY_PROOF_HEADER])) {
          unproven = true;
          upstream.terminate();
        }
      });
      upstream.once("unexpected-response", (_req, res) => {
        status = res.statusCode ?? null;
        if (status !== null) onResponse("upgrade", status);
        res.resume();
        upstream.terminate();
      });
      upstream.once("open", () => {
        if (!unproven) settle({ ok: true, ws: upstream });
      });
      upstream.on("error", () => {});
      upstream.once("close", () => settle({ ok: false, status, clientGone: false, ...(unproven ? { unproven } : {}) }));
    });
  });
  return { terminate, early, connected };
}

/**
 * Asks the gateway for a challenge: a plain GET on the capability's path,
 * answered 401 with `WWW-Authenticate: AgentComputer challenge="…"`. Any
 * other answer is the gateway's status (or null when none came). Returns a
 * function that abandons the request.
 */
function fetchChallenge(
  websocketUrl: string,
  timeoutMs: number,
  onResponse: (stage: "challenge", status: number) => void,
  done: (answer: { challenge: string } | { status: number | null }) => void,
): () => void {
  const url = new URL(websocketUrl);
  url.protocol = url.protocol === "wss:" ? "https:" : "http:";
  let finished = false;
  const finish = (answer: { challenge: string } | { status: number | null }) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    done(answer);
  };
  const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
    method: "GET",
    headers: { [GATEWAY_CHALLENGE_HEADER]: "1" },
  });
  const timer = setTimeout(() => {
    request.destroy();
    finish({ status: null });
  }, timeoutMs);
  request.on("response", (res) => {
    res.resume();
    if (res.statusCode !== undefined) onResponse("challenge", res.statusCode);
    const challenge = res.statusCode === 401 ? parseGatewayChallenge(res.headers["www-authenticate"]) : undefined;
    finish(challenge ? { challenge } : { status: res.statusCode === 401 ? null : (res.statusCode ?? null) });
  });
  request.on("error", () => finish({ status: null }));
  request.end();
  return () => {
    request.destroy();
    finish({ status: null });
  };
}
