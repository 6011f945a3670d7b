// `agent-computer-e2b-template build`: builds the computer template on E2B
// from the computer image (pushed to a registry E2B can pull), with staged
// progress. E2B_API_KEY is read from the environment, E2B_API_URL too.
import { buildE2bTemplate } from "../src/index.js";

const usage = `Usage: agent-computer-e2b-template build --image <registry ref> [options]

Options:
  --image <ref>       The computer image in a registry E2B can pull (required).
  --name <name>       The template's name (default agent-computer).
  --cpu <count>       vCPUs (default 2).
  --memory-mb <mb>    Memory in MB (default 4096).

Environment: E2B_API_KEY (required), E2B_API_URL.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const flags: Record<string, string | undefined> = {};
  for (let i = 0; i < rest.length; i += 2) flags[(rest[i] ?? "").replace(/^--/, "")] = rest[i + 1];
  const image = flags.image;
  if (command !== "build" || !image) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const apiKey = process.env.E2B_API_KEY;
  if (!apiKey) {
    process.stderr.write("Set E2B_API_KEY.\n");
    return 2;
  }
  try {
    const built = await buildE2bTemplate({
      apiKey,
      image,
      name: flags.name,
      apiUrl: process.env.E2B_API_URL || undefined,
      cpuCount: flags.cpu ? Number(flags.cpu) : undefined,
      memoryMB: flags["memory-mb"] ? Number(flags["memory-mb"]) : undefined,
      onProgress: (stage, message) => process.stdout.write(`[${stage}] ${message}\n`),
    });
    process.stdout.write(`E2B_TEMPLATE=${built.name}\n`);
    return 0;
  } catch (error) {
    const failure = error as { code?: string; message?: string };
    process.stderr.write(`${failure.code ?? "ERROR"}: ${failure.message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
