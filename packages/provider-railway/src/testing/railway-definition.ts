import type { ServiceOperation } from "@agent-computer/testing/emulator";
import { z } from "zod";
import { requestProblems } from "./railway-schema.js";

/**
 * The service's two doors, for the emulator's ServiceRecorder:
 *
 * - the GraphQL endpoint (`POST /graphql/v2`; the SDK's
 *   DEFAULT_RAILWAY_GRAPHQL_ENDPOINT), every body checked against the
 *   published schema's part (railway-schema.ts): the document must parse
 *   and validate, and the variables must be an object; auth is a bearer
 *   token or a `project-access-token` header (SDK src/core/graphql-client.ts,
 *   authHeader). GraphQL answers 200 with `data` and/or `errors`; a 429
 *   carries Retry-After (CLI src/client.rs, parse_graphql_response).
 * - the exec bridge (`GET /ws/exec`, an upgrade offering `railway-shell`
 *   and the shell token; SDK src/core/exec-ws-client.ts).
 */
const graphqlBody = z.unknown().superRefine((body, ctx) => {
  for (const message of requestProblems(body)) ctx.addIssue({ code: "custom", message });
});

const graphqlAnswer = z.object({
  data: z.unknown().optional(),
  errors: z.array(z.object({ message: z.string() }).loose()).optional(),
});

const auth = z
  .looseObject({ authorization: z.string().optional(), "project-access-token": z.string().optional() })
  .refine((h) => h.authorization?.startsWith("Bearer ") || h["project-access-token"], "no bearer or project token");

export const RAILWAY_OPERATIONS: readonly ServiceOperation[] = [
  {
    name: "graphql",
    method: "POST",
    path: /^\/graphql\/v2$/,
    source: "railwayapp/cli src/gql/schema.json; railway-ts-sdk src/core/graphql-client.ts",
    body: graphqlBody,
    headers: auth,
    responses: { 200: graphqlAnswer, 429: null },
  },
  {
    name: "exec bridge",
    method: "GET",
    path: /^\/ws\/exec$/,
    source: "railway-ts-sdk src/core/exec-ws-client.ts; railwayapp/cli src/controllers/sandbox_exec.rs",
    headers: z.looseObject({ "sec-websocket-protocol": z.string().regex(/^railway-shell, ?\S+$/) }),
    responses: { 101: null, 401: null },
  },
];
