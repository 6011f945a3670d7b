import { AgentComputerError, parseInput } from "@agent-computer/core";
import { z } from "zod";
import { e2bFailure } from "./e2b-failure.js";
import { E2B_SDK, NOVITA_SDK } from "./sandbox-sdk.js";

/** The stages a template build reports, in order. */
export type E2bTemplateStage = "requesting" | "building" | "ready";

export const buildE2bTemplateOptionsSchema = z.object({
  /**
   * Whose template: E2B's (the `e2b` SDK) or Novita's (`novita-sandbox`,
   * whose template build speaks the same wire on its current domains and
   * refuses its legacy ones). Novita has no stock desktop template, so its
   * computers need this one.
   */
  service: z.enum(["e2b", "novita"]).default("e2b"),
  /** The API key (E2B_API_KEY, or NOVITA_API_KEY for Novita). */
  apiKey: z.string().min(1),
  /** The template's name, which `e2bProvider({ template })` names (default agent-computer). */
  name: z.string().min(1).default("agent-computer"),
  /**
   * The computer image in a registry E2B can pull (push `computerImageRef()`
   * there first; pin a digest in production).
   */
  image: z.string().min(1),
  /** Credentials for a private registry. */
  registry: z.object({ username: z.string(), password: z.string() }).optional(),
  /** The control plane (E2B_API_URL or NOVITA_API_URL), for the emulator. */
  apiUrl: z.string().url().optional(),
  domain: z.string().min(1).optional(),
  /** vCPUs of every computer started from the template. */
  cpuCount: z.number().int().positive().default(2),
  /** Memory of every computer, in MB. */
  memoryMB: z.number().int().positive().default(4096),
  /** Called at each stage, and with each build log line. */
  onProgress: z.custom<(stage: E2bTemplateStage, message: string) => void>((v) => typeof v === "function").optional(),
  signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal).optional(),
});

export type BuildE2bTemplateOptions = z.input<typeof buildE2bTemplateOptionsSchema>;

/**
 * Builds the computer template (`agent-computer-e2b-template build`): the
 * computer image as an E2B (or Novita) template at 2 vCPU and 4 GB by default, through
 * the SDK's own template build (request, trigger, poll), with staged
 * progress. Returns the template's id and name.
 */
export async function buildE2bTemplate(
  options: BuildE2bTemplateOptions,
): Promise<{ templateId: string; name: string }> {
  const parsed = parseInput(buildE2bTemplateOptionsSchema, options, "BuildE2bTemplateOptions");
  const report = parsed.onProgress ?? (() => {});
  report(
    "requesting",
    `Requesting template ${parsed.name} from ${parsed.image} (${parsed.cpuCount} vCPU, ${parsed.memoryMB} MB)`,
  );
  const sdk = parsed.service === "novita" ? NOVITA_SDK : E2B_SDK;
  const { Template } = sdk;
  const template = Template().fromImage(parsed.image, parsed.registry);
  let building = false;
  try {
    const info = await Template.build(template, parsed.name, {
      apiKey: parsed.apiKey,
      ...(parsed.apiUrl ? { apiUrl: parsed.apiUrl } : {}),
      ...(parsed.domain ? { domain: parsed.domain } : {}),
      cpuCount: parsed.cpuCount,
      memoryMB: parsed.memoryMB,
      signal: parsed.signal,
      onBuildLogs: (entry) => {
        if (!building && /Starting building|Template created/.test(entry.message)) {
          building = true;
          report("building", entry.message);
          return;
        }
        if (building) report("building", entry.message);
      },
    });
    report("ready", `Template ${info.name} is ready (id ${info.templateId})`);
    return { templateId: info.templateId, name: info.name };
  } catch (error) {
    if (parsed.signal?.aborted) throw parsed.signal.reason;
    if (error instanceof Error && /not supported on legacy domains/.test(error.message)) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        `${sdk.service} builds templates only on its current domains; ${parsed.domain ?? "this domain"} is a legacy one.`,
        { cause: error },
      );
    }
    if (error instanceof Error && error.name === "BuildError") {
      throw new AgentComputerError("UNAVAILABLE", `The template build failed: ${error.message.slice(0, 300)}`, {
        retryable: false,
        cause: error,
      });
    }
    throw e2bFailure(error, `build the template ${parsed.name}`, sdk.service);
  }
}
