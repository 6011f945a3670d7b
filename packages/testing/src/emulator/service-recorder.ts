import type { z } from "zod";

/**
 * One operation of a service as its published definition states it, the
 * source the schemas come from beside it (an OpenAPI path, a protobuf
 * message, an SDK source line): never the client under test.
 */
export interface ServiceOperation {
  /** The definition's name for it (operationId, rpc name). */
  name: string;
  method: string;
  /** Matched against the request path (no query). */
  path: RegExp;
  /** Where the schemas come from, to cite. */
  source: string;
  /** The request's JSON body; unset when the operation takes none (a body sent is then a violation). */
  body?: z.ZodType;
  /** The query parameters, as strings. */
  query?: z.ZodType;
  /**
   * The request headers the definition names (lower-cased names, string
   * values), checked with the rest passed through: declare it as a
   * `z.looseObject`.
   */
  headers?: z.ZodType;
  /**
   * The answers the definition lists, by status, each with its body's
   * schema (null: no body checked). An answer with a status not listed is
   * a violation.
   */
  responses: Record<number, z.ZodType | null>;
}

/** What an emulator received and sent, as the recorder saw it. */
export interface RecordedCall {
  method: string;
  path: string;
  status: number;
  /** The operation the request matched; undefined when none did. */
  operation?: string;
}

/** One way a request or an answer left the definition. */
export interface Violation {
  call: string;
  operation?: string;
  where: "route" | "request" | "response";
  message: string;
}

/** An exchange under way: the recorder checked the request; `answer` checks and records the response. */
export interface Exchange {
  readonly operation: ServiceOperation | undefined;
  answer(status: number, body?: unknown): void;
}

/**
 * Holds an emulator to the schemas it declares for its service: every
 * request it receives and every answer it sends is checked, each call is
 * recorded, and each way one leaves the definition is kept as a violation,
 * so a test can assert there were none (`assertNoViolations`).
 */
export class ServiceRecorder {
  readonly calls: RecordedCall[] = [];
  readonly violations: Violation[] = [];

  constructor(
    /** The service's name, in messages. */
    readonly service: string,
    private readonly operations: readonly ServiceOperation[],
  ) {}

  /** Checks a request against its operation and opens the exchange its answer completes. */
  request(
    method: string,
    path: string,
    input: { query?: URLSearchParams; body?: unknown; headers?: Record<string, string | string[] | undefined> } = {},
  ): Exchange {
    const operation = this.operations.find((op) => op.method === method && op.path.test(path));
    const call = `${method} ${path}`;
    if (!operation) {
      this.violations.push({ call, where: "route", message: `no operation of ${this.service} is ${call}` });
    } else {
      this.checkRequest(operation, call, input);
    }
    return {
      operation,
      answer: (status, body) => {
        this.calls.push({ method, path, status, operation: operation?.name });
        if (operation) this.checkAnswer(operation, call, status, body);
      },
    };
  }

  /** Throws, listing every violation, when there was one. */
  assertNoViolations(): void {
    if (this.violations.length === 0) return;
    const lines = this.violations.map(
      (v) => `- ${v.call} (${v.operation ?? "no operation"}, ${v.where}): ${v.message}`,
    );
    throw new Error(`${this.violations.length} exchanges left ${this.service}'s definition:\n${lines.join("\n")}`);
  }

  private checkRequest(
    operation: ServiceOperation,
    call: string,
    input: { query?: URLSearchParams; body?: unknown; headers?: Record<string, string | string[] | undefined> },
  ): void {
    const refuse = (message: string) =>
      this.violations.push({ call, operation: operation.name, where: "request", message });
    if (operation.query) {
      const result = operation.query.safeParse(Object.fromEntries(input.query ?? []));
      if (!result.success) refuse(`query: ${summary(result.error)}`);
    }
    if (operation.headers) {
      const result = operation.headers.safeParse(input.headers ?? {});
      if (!result.success) refuse(`headers: ${summary(result.error)}`);
    }
    if (operation.body) {
      const result = operation.body.safeParse(input.body);
      if (!result.success) refuse(`body: ${summary(result.error)}`);
    } else if (input.body !== undefined) {
      refuse("a body was sent to an operation that takes none");
    }
  }

  private checkAnswer(operation: ServiceOperation, call: string, status: number, body: unknown): void {
    const refuse = (message: string) =>
      this.violations.push({ call, operation: operation.name, where: "response", message });
    if (!(status in operation.responses)) {
      refuse(`status ${status} is not an answer the definition lists`);
      return;
    }
    const schema = operation.responses[status];
    if (!schema) return;
    const result = schema.safeParse(body);
    if (!result.success) refuse(`body of ${status}: ${summary(result.error)}`);
  }
}

function summary(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
    .join("; ");
}
