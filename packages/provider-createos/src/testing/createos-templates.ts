import { randomBytes } from "node:crypto";
import { refuse } from "./createos-vms.js";

type Json = Record<string, unknown>;

/**
 * What a template build yields: the image a Dockerfile (on `base`) stands
 * for, or undefined when the build fails. The service builds a restricted
 * Dockerfile into a rootfs (types.ts TemplateCreateRequest); the emulator
 * cannot run that builder, so a test says what each build makes.
 */
export type TemplateBuilder = (dockerfile: string, base: string | undefined) => string | undefined;

/** How long a build stays `pending`, then `building` (the emulator's pace, not the service's). */
const STEP_MS = 300;

/** One template (types.ts TemplateView). */
class TemplateRecord {
  readonly id = `tpl_${randomBytes(8).toString("hex")}`;
  readonly createdAt = new Date().toISOString();
  status: "pending" | "building" | "ready" | "failed" = "pending";
  builtAt: string | undefined;
  image: string | undefined;

  constructor(
    readonly name: string,
    readonly base: string,
    readonly dockerfile: string,
  ) {}

  view(withDockerfile: boolean): Json {
    return {
      id: this.id,
      name: this.name,
      base: this.base,
      status: this.status,
      ext4_size_bytes: this.status === "ready" ? 1_073_741_824 : 0,
      created_at: this.createdAt,
      ...(this.builtAt ? { built_at: this.builtAt } : {}),
      ...(withDockerfile ? { dockerfile: this.dockerfile } : {}),
    };
  }
}

/** The account's templates: created `pending`, then `building`, then `ready` (or `failed`), usable as `rootfs` by id or name. */
export class EmulatedTemplates {
  private readonly templates = new Map<string, TemplateRecord>();
  /** Every create, by name (a test counts builds). */
  readonly created: string[] = [];

  constructor(
    private readonly build: TemplateBuilder | undefined,
    private readonly defaultBase: string,
  ) {}

  /** The image a ready template (by id or name) stands for. */
  imageOf(idOrName: string): string | undefined {
    const template = this.find(idOrName);
    return template?.status === "ready" ? template.image : undefined;
  }

  list(query: URLSearchParams): Json {
    const all = [...this.templates.values()];
    const limit = Math.min(500, Number(query.get("limit") ?? 50) || 50);
    const offset = Number(query.get("offset") ?? 0) || 0;
    const page = all.slice(offset, offset + limit);
    return {
      data: page.map((t) => t.view(false)),
      pagination: { total: all.length, limit, offset, count: page.length },
    };
  }

  get(idOrName: string, query: URLSearchParams): Json {
    const template = this.find(idOrName);
    if (!template) throw refuse(404, "template not found");
    return template.view(query.get("include") === "dockerfile");
  }

  create(body: Json): Json {
    const name = body.name as string;
    if ([...this.templates.values()].some((t) => t.name === name)) throw refuse(409, `a template named ${name} exists`);
    const base = (body.base as string | undefined) ?? this.defaultBase;
    const template = new TemplateRecord(name, base, body.dockerfile as string);
    this.templates.set(template.id, template);
    this.created.push(name);
    setTimeout(() => {
      template.status = "building";
      setTimeout(() => {
        const image = this.build?.(template.dockerfile, body.base as string | undefined);
        Object.assign(
          template,
          image ? { status: "ready", image, builtAt: new Date().toISOString() } : { status: "failed" },
        );
      }, STEP_MS);
    }, STEP_MS);
    return template.view(false);
  }

  private find(idOrName: string): TemplateRecord | undefined {
    return this.templates.get(idOrName) ?? [...this.templates.values()].find((t) => t.name === idOrName);
  }
}
