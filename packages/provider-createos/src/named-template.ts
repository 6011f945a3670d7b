import { createHash } from "node:crypto";
import { AgentComputerError, loggerOf, type OpContext } from "@agent-computer/core";
import { abortableSleep } from "@agent-computer/provider-kit";
import type { TemplateView } from "@nodeops-createos/sandbox";
import type { CreateosService } from "./createos-service.js";

/** What builds the template (the provider's `template` option). */
export interface TemplateRecipe {
  name?: string;
  dockerfile: string;
  base?: string;
}

/** How often a build's status is read. */
const POLL_MS = 1_000;

/** The template's name for a recipe: given, or made from the Dockerfile's and base's hash. */
export function templateNameOf(recipe: TemplateRecipe): string {
  if (recipe.name) return recipe.name;
  const hash = createHash("sha256")
    .update(`${recipe.base ?? ""}\n${recipe.dockerfile}`)
    .digest("hex");
  return `agent-computer-${hash.slice(0, 16)}`;
}

/**
 * The template computers boot from, found by name among the account's
 * templates (client.js TemplatesApi.list) or built once from the recipe
 * (TemplatesApi.create: `pending`, `building`, then `ready` or `failed`,
 * types.ts TemplateStatus) and waited for. One resolve is shared by every
 * provision of the provider; a failed one is tried again by the next.
 */
export class NamedTemplate {
  readonly name: string;
  private resolving: Promise<string> | undefined;

  constructor(
    private readonly service: CreateosService,
    private readonly recipe: TemplateRecipe,
    private readonly timeoutMs: number,
  ) {
    this.name = templateNameOf(recipe);
  }

  /** The template's name once it is ready to boot from. */
  resolve(context: OpContext, signal: AbortSignal): Promise<string> {
    if (!this.resolving) {
      this.resolving = this.findOrBuild(context, signal);
      this.resolving.catch(() => {
        this.resolving = undefined;
      });
    }
    return this.resolving;
  }

  private async findOrBuild(context: OpContext, signal: AbortSignal): Promise<string> {
    const templates = this.service.client.templates;
    const list = await this.service.retried(() => templates.list({ signal }), "list templates", signal);
    let template: TemplateView | undefined = list.find((t) => t.name === this.name);
    if (!template || template.status === "failed") {
      // A failed build is not used; a new one needs a free name, so a failed template keeps its name and is reported.
      if (template?.status === "failed") throw this.failed(template);
      loggerOf(context).info("building the computer's template", { template: this.name });
      try {
        template = await templates.create(
          {
            name: this.name,
            dockerfile: this.recipe.dockerfile,
            ...(this.recipe.base ? { base: this.recipe.base } : {}),
          },
          { signal },
        );
      } catch (error) {
        throw this.service.failure(error, `build the template ${this.name}`, "not-found");
      }
    }
    const until = Date.now() + this.timeoutMs;
    const id = template.id;
    while (template.status !== "ready") {
      if (template.status === "failed") throw this.failed(template);
      if (Date.now() >= until) {
        throw new AgentComputerError(
          "TIMEOUT",
          `The template ${this.name} stayed ${template.status} past its build timeout.`,
        );
      }
      await abortableSleep(POLL_MS, signal);
      template = await this.service.retried(
        () => templates.get(id, { signal }),
        `read the template ${this.name}`,
        signal,
      );
    }
    return this.name;
  }

  private failed(template: TemplateView): AgentComputerError {
    return new AgentComputerError(
      "UNAVAILABLE",
      `The template ${this.name} (${template.id}) failed to build; read its log (client.templates.logs), fix the Dockerfile, and give the template another name.`,
      { retryable: false },
    );
  }
}
