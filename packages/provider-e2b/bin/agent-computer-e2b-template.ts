// `agent-computer-e2b-template build`: builds the computer template on E2B
// (or Novita, `--service novita`) from the computer image (pushed to a
// registry the service can pull), with staged progress. The key and the
// control plane come from the environment: E2B_API_KEY and E2B_API_URL, or
// NOVITA_API_KEY, NOVITA_API_URL and NOVITA_DOMAIN.
import { buildE2bTemplate, e2bOptionsFromEnv } from "../src/index.js";

const usage = `Usage: agent-computer-e2b-template build --image <registry ref> [options]

Options:
  --image <ref>       The computer image in a registry the service can pull (required).
  --service <name>    e2b (default) or novita.
  --name <name>       The template's name (default agent-computer).
  --cpu <count>       vCPUs (default 2).
  --memory-mb <mb>    Memory in MB (default 4096).

Environment: E2B_API_KEY (required) and E2B_API_URL; for Novita NOVITA_API_KEY
(required), NOVITA_API_URL and NOVITA_DOMAIN. Prints the variable that names
the template to computers: E2B_TEMPLATE, or NOVITA_TEMPLATE.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const flags: Record<string, string | undefined> = {};
  for (let i = 0; i < rest.length; i += 2) flags[(rest[i] ?? "").replace(/^--/, "")] = rest[i + 1];
  const image = flags.image;
  const service = flags.service ?? "e2b";
  if (command !== "build" || !image || (service !== "e2b" && service !== "novita")) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const prefix = service === "novita" ? "NOVITA" : "E2B";
  // The same <prefix>_* variables the provider reads.
  const { apiKey, apiUrl, domain } = e2bOptionsFromEnv(process.env, prefix);
  if (!apiKey) {
    process.stderr.write(`Set ${prefix}_API_KEY.\n`);
    return 2;
  }
  try {
    const built = await buildE2bTemplate({
      service,
      apiKey,
      image,
      name: flags.name,
      apiUrl,
      domain,
      cpuCount: flags.cpu ? Number(flags.cpu) : undefined,
      memoryMB: flags["memory-mb"] ? Number(flags["memory-mb"]) : undefined,
      onProgress: (stage, message) => process.stdout.write(`[${stage}] ${message}\n`),
    });
    process.stdout.write(`${prefix}_TEMPLATE=${built.name}\n`);
    return 0;
  } catch (error) {
    const failure = error as { code?: string; message?: string };
    process.stderr.write(`${failure.code ?? "ERROR"}: ${failure.message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
