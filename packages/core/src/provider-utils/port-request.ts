import { z } from "zod";
import { parseInput } from "../validation/parse-input.js";

const portSchema = z.number().int().min(1).max(65535);
const portOptionsSchema = z.object({ private: z.boolean() });

/** Checks the arguments of `Machine.portUrl` (INVALID_ARGUMENT naming the bad one). */
export function checkPortRequest(port: unknown, opts: unknown): void {
  parseInput(portSchema, port, "port");
  parseInput(portOptionsSchema, opts, "port options");
}
