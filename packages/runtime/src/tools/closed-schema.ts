import { z } from "zod";

type AnySchema = z.ZodType & { _zod: { def: Record<string, unknown> & { type: string } } };

/**
 * The schema with every object in it closed: an unknown property is an
 * `unrecognized_keys` error when parsed, and `additionalProperties: false`
 * in its JSON Schema, so a model (or an MCP client's own check) learns that
 * a misspelt argument is wrong instead of having it dropped silently
 * (docs/architecture.md §10, "Closed input schemas"). Checks, defaults and
 * descriptions are kept: each part is cloned with its parent's metadata.
 */
export function closedSchema<S extends z.ZodType>(schema: S): S {
  return close(schema as unknown as AnySchema) as unknown as S;
}

function close(schema: AnySchema): AnySchema {
  const def = schema._zod.def;
  const again = (part: unknown) => close(part as AnySchema);
  const next = (changes: Record<string, unknown>) =>
    (schema as unknown as { clone(def: unknown, params: { parent: boolean }): AnySchema }).clone(
      { ...def, ...changes },
      { parent: true },
    );
  switch (def.type) {
    case "object": {
      const shape = Object.fromEntries(
        Object.entries(def.shape as Record<string, unknown>).map(([key, part]) => [key, again(part)]),
      );
      // An object that already says what to do with other keys (a catchall, a passthrough) keeps it.
      return next({ shape, catchall: def.catchall ?? z.never() });
    }
    case "array":
      return next({ element: again(def.element) });
    case "union":
      return next({ options: (def.options as unknown[]).map(again) });
    case "tuple":
      return next({ items: (def.items as unknown[]).map(again), ...(def.rest ? { rest: again(def.rest) } : {}) });
    case "record":
      return next({ valueType: again(def.valueType) });
    case "pipe":
      return next({ in: again(def.in), out: again(def.out) });
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "nonoptional":
    case "readonly":
    case "catch":
      return next({ innerType: again(def.innerType) });
    default:
      return schema;
  }
}
