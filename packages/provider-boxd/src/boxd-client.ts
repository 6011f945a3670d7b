import { AgentComputerError } from "@agent-computer/core";
import { redactSecrets, retryWithin, serviceFailure } from "@agent-computer/provider-kit";
import * as grpc from "@grpc/grpc-js";
import { type BoxdMessage, boxdMethod, decodeMessage, encodeMessage } from "./boxd-definition.js";
import type { BoxdTokenSource } from "./boxd-token.js";
import { type ListedVm, vmsOfListAnswer } from "./boxd-vm-list.js";

/** GetVmResponse's facts the provider reads (proto/boxd-api.proto). */
export interface BoxdVm {
  vm_id: string;
  name: string;
  status: string;
}

export interface BoxdClientOptions {
  /** `http://host:port` speaks cleartext HTTP/2 (the service's documented transport), `https://host:port` TLS. */
  apiUrl: string;
  tokens: BoxdTokenSource;
  /** A control-plane call's own deadline. */
  requestTimeoutMs: number;
  /** How long transient failures (UNAVAILABLE, RESOURCE_EXHAUSTED, INTERNAL) are retried. */
  retryMs: number;
  secrets: Set<string>;
}

/**
 * gRPC status codes as the HTTP statuses the kit's `serviceFailure` sorts
 * (docs.boxd.sh reference/grpc-api, "Errors"): a refused token is never
 * taken for a vanished machine; NOT_FOUND is gone or missing as the call
 * says; quota and server errors are transient.
 */
const STATUS_OF_CODE: Partial<Record<grpc.status, number>> = {
  [grpc.status.INVALID_ARGUMENT]: 400,
  [grpc.status.UNAUTHENTICATED]: 401,
  [grpc.status.PERMISSION_DENIED]: 403,
  [grpc.status.NOT_FOUND]: 404,
  [grpc.status.ALREADY_EXISTS]: 409,
  [grpc.status.FAILED_PRECONDITION]: 409,
  [grpc.status.RESOURCE_EXHAUSTED]: 429,
  [grpc.status.INTERNAL]: 500,
  [grpc.status.UNAVAILABLE]: 503,
  [grpc.status.DEADLINE_EXCEEDED]: 504,
};
const TRANSIENT = new Set([grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED, grpc.status.INTERNAL]);

/** A failed call's gRPC status code, when it has one. */
export function grpcCodeOf(error: unknown): grpc.status | undefined {
  if (AgentComputerError.is(error)) {
    const code = error.details?.grpcCode;
    return typeof code === "number" ? code : undefined;
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "number" ? code : undefined;
}

/** The address gRPC dials and the channel's credentials, from `apiUrl`. */
function channelOf(apiUrl: string): { target: string; credentials: grpc.ChannelCredentials } {
  const url = new URL(apiUrl);
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return {
    target: `${url.hostname}:${port}`,
    credentials: url.protocol === "https:" ? grpc.credentials.createSsl() : grpc.credentials.createInsecure(),
  };
}

/**
 * A client of boxd's public gRPC API for the calls proto/boxd-api.proto
 * declares: every call carries `authorization: Bearer <JWT>` metadata
 * (BoxdTokenSource), control-plane calls are retried on transient codes
 * within `retryMs`, and failures become the contract's errors with every
 * secret removed.
 */
export class BoxdClient {
  private readonly channel: grpc.Client;

  constructor(private readonly options: BoxdClientOptions) {
    const { target, credentials } = channelOf(options.apiUrl);
    this.channel = new grpc.Client(target, credentials, {
      // Exec output and stdin chunks stay well under this; the default 4 MiB is kept for answers.
      "grpc.max_receive_message_length": 16 * 1024 * 1024,
    });
  }

  redact(text: string): string {
    return redactSecrets(text, this.options.secrets);
  }

  /** Metadata with the current token. */
  async metadata(signal?: AbortSignal): Promise<{ metadata: grpc.Metadata; token: string }> {
    const token = await this.options.tokens.token(signal);
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${token}`);
    return { metadata, token };
  }

  /** One unary call, retried while transient, its failure sorted. */
  async call(
    rpc: string,
    request: BoxdMessage,
    what: string,
    signal: AbortSignal,
    missingMeans: "gone" | "not-found" = "gone",
  ): Promise<BoxdMessage> {
    return retryWithin(() => this.once(rpc, request, signal), {
      until: Date.now() + this.options.retryMs,
      signal,
      isTransient: (error) => {
        const code = grpcCodeOf(error);
        return code !== undefined && TRANSIENT.has(code);
      },
      failure: (error) => this.failure(error, what, missingMeans),
    });
  }

  /** One attempt; a refused token is exchanged again and the call made once more. */
  private async once(rpc: string, request: BoxdMessage, signal: AbortSignal): Promise<BoxdMessage> {
    try {
      return await this.unary(rpc, request, signal);
    } catch (error) {
      if (grpcCodeOf(error) !== grpc.status.UNAUTHENTICATED) throw error;
      return this.unary(rpc, request, signal);
    }
  }

  private async unary(rpc: string, request: BoxdMessage, signal: AbortSignal): Promise<BoxdMessage> {
    const method = boxdMethod(rpc);
    const { metadata, token } = await this.metadata(signal);
    return new Promise<BoxdMessage>((resolve, reject) => {
      const call = this.channel.makeUnaryRequest<BoxdMessage, Buffer>(
        method.path,
        (message) => encodeMessage(method.requestType, message),
        (bytes) => bytes,
        request,
        metadata,
        { deadline: Date.now() + this.options.requestTimeoutMs },
        (error, answer) => {
          signal.removeEventListener("abort", cancel);
          if (error) {
            if (error.code === grpc.status.UNAUTHENTICATED) this.options.tokens.invalidate(token);
            reject(signal.aborted ? signal.reason : error);
            return;
          }
          resolve(rpc === "ListVms" ? { raw: answer } : decodeMessage(method.responseType, answer as Buffer));
        },
      );
      const cancel = () => call.cancel();
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  /** The contract's error for a failed call (no secret in it). */
  failure(error: unknown, what: string, missingMeans: "gone" | "not-found" = "gone"): unknown {
    if (AgentComputerError.is(error)) return error;
    const code = grpcCodeOf(error);
    if (code === undefined) return error;
    const detail = (error as { details?: string }).details ?? "";
    return serviceFailure({
      service: "boxd",
      what,
      status:
        code === grpc.status.UNAVAILABLE && /connect|ECONNREFUSED|No connection/i.test(detail)
          ? undefined
          : (STATUS_OF_CODE[code] ?? 500),
      detail,
      details: { grpcCode: code, grpcStatus: grpc.status[code] },
      missingMeans,
      secrets: this.options.secrets,
    });
  }

  /** A bidirectional Exec call with the current token (boxd-command.ts drives it). */
  async openExec(signal: AbortSignal): Promise<grpc.ClientDuplexStream<BoxdMessage, BoxdMessage>> {
    const method = boxdMethod("Exec");
    const { metadata } = await this.metadata(signal);
    return this.channel.makeBidiStreamRequest<BoxdMessage, BoxdMessage>(
      method.path,
      (message) => encodeMessage(method.requestType, message),
      (bytes) => decodeMessage(method.responseType, bytes),
      metadata,
    );
  }

  /** A client-streaming UploadFileStream call (the first chunk names the machine, path and size). */
  async uploadFile(vm: string, path: string, bytes: Uint8Array, signal: AbortSignal): Promise<number> {
    const method = boxdMethod("UploadFileStream");
    const { metadata } = await this.metadata(signal);
    const answer = await new Promise<Buffer>((resolve, reject) => {
      const call = this.channel.makeClientStreamRequest<BoxdMessage, Buffer>(
        method.path,
        (message) => encodeMessage(method.requestType, message),
        (raw) => raw,
        metadata,
        { deadline: Date.now() + this.options.requestTimeoutMs },
        (error, done) => (error ? reject(this.failure(error, `upload ${path}`)) : resolve(done as Buffer)),
      );
      signal.addEventListener("abort", () => call.cancel(), { once: true });
      call.write({ vm_id: vm, path, total_size: bytes.length });
      for (let offset = 0; offset < bytes.length; offset += UPLOAD_CHUNK_BYTES) {
        call.write({ data: Buffer.from(bytes.subarray(offset, offset + UPLOAD_CHUNK_BYTES)) });
      }
      call.end();
    });
    return Number(decodeMessage(method.responseType, answer).bytes_written);
  }

  async get(vm: string, signal: AbortSignal): Promise<BoxdVm> {
    const answer = await this.call("GetVm", { vm_id: vm }, `look up ${vm}`, signal);
    return { vm_id: String(answer.vm_id), name: String(answer.name), status: String(answer.status) };
  }

  /** The account's machines as ListVms answers them (read without assuming its field numbers: boxd-vm-list.ts). */
  async list(signal: AbortSignal): Promise<ListedVm[]> {
    const answer = await this.call("ListVms", {}, "list machines", signal, "not-found");
    return vmsOfListAnswer(answer.raw as Buffer);
  }

  close(): void {
    this.channel.close();
  }
}

/** Upload chunks stay far below gRPC's 4 MiB message cap. */
const UPLOAD_CHUNK_BYTES = 256 * 1024;
