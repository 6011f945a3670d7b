import { restoreLimitsSchema } from "@agent-computer/checkpoint";
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import { z } from "zod";
import type { HomeKeyring } from "../home-keyring.js";
import type { HomeRecords } from "../home-records.js";
import type { HomeStoreStage } from "../home-store-stage.js";

const MIB = 1024 * 1024;
/**
 * How long a bucket request's socket may sit idle before the SDK gives it up
 * and retries, for clients the store builds from a config: the SDK's own
 * default is no limit (its requestTimeout only logs a warning), so one
 * stalled connection would hold a checkpoint until its deadline, or forever.
 */
const IDLE_SOCKET_MS = 60_000;
const CONNECT_TIMEOUT_MS = 10_000;

/** The checks of `ObjectAgentHomeStoreOptions` (object-agent-home-store-options.ts documents each). */
export const storeOptionsSchema = z
  .object({
    s3: z.custom<S3Client | object>((v) => typeof v === "object" && v !== null, {
      message: "expected an S3Client or an S3ClientConfig",
    }),
    bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "a bucket name (3 to 63 of a-z, 0-9, '.', '-')"),
    prefix: z
      .string()
      .regex(/^([A-Za-z0-9._-]+\/)*$/, "empty, or segments of letters, digits, '.', '_', '-' each ending in '/'")
      .refine((v) => !v.split("/").some((segment) => segment === "." || segment === ".."), {
        message: "no '.' or '..' segments",
      })
      .optional(),
    dataDir: z.string().min(1),
    keyring: z.custom<HomeKeyring>(
      (v) => typeof (v as HomeKeyring)?.wrap === "function" && typeof (v as HomeKeyring)?.unwrap === "function",
      { message: "expected a HomeKeyring with wrap and unwrap" },
    ),
    records: z.custom<HomeRecords>(
      (v) =>
        typeof (v as HomeRecords)?.read === "function" &&
        typeof (v as HomeRecords)?.setWrappedDataKey === "function" &&
        typeof (v as HomeRecords)?.advanceRevision === "function" &&
        typeof (v as HomeRecords)?.list === "function",
      { message: "expected HomeRecords with read, setWrappedDataKey, advanceRevision and list" },
    ),
    limits: restoreLimitsSchema.optional(),
    // S3 itself needs 5 MiB parts; smaller ones are for servers without that rule (tests).
    partBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(5 * 1024 * MIB)
      .optional(),
    partConcurrency: z.number().int().min(1).max(64).optional(),
    abandonAfterMs: z.number().int().nonnegative().optional(),
    format: z.union([z.literal(1), z.literal(2)]).optional(),
    chunkConcurrency: z.number().int().min(1).max(64).optional(),
    chunkGraceMs: z.number().int().min(100).optional(),
    onStage: z.custom<(event: HomeStoreStage) => void>((v) => typeof v === "function").optional(),
  })
  .strict();

/** `config` with an idle-socket limit, unless the caller chose its own request handler. */
export function withIdleTimeout(config: S3ClientConfig): S3ClientConfig {
  if (config.requestHandler !== undefined) return config;
  return { ...config, requestHandler: { socketTimeout: IDLE_SOCKET_MS, connectionTimeout: CONNECT_TIMEOUT_MS } };
}
