// `agent-computer-image build|tag`: builds the computer image with staged
// progress, or prints the tag desktop-runtime's image files give.
import { type ComputerImageExtras, computerImageRef } from "@agent-computer/desktop-runtime";
import { buildComputerImage } from "../src/index.js";

const usage = `Usage: agent-computer-image <command> [options]

Commands:
  build     Build the computer image unless the engine has the exact tag.
  tag       Print the image reference hosts will run.

Options (build, tag):
  --brave            Add Brave (from Brave's apt repository).
  --uv [version]     Add uv (from its GitHub release).
  --image <ref>      Build or name this reference instead of the computed one.
  --force            Build even when the tag exists.
  --quiet            Print only the result.

Environment: AGENT_COMPUTER_IMAGE names another image; AGENT_COMPUTER_IMAGE_TAG another tag.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const extras: ComputerImageExtras = {};
  let image: string | undefined;
  let force = false;
  let quiet = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === "--brave") extras.brave = true;
    else if (arg === "--uv") {
      extras.uv = true;
      const next = rest[i + 1];
      if (next && !next.startsWith("--")) extras.uvVersion = rest[++i];
    } else if (arg === "--image") image = rest[++i];
    else if (arg === "--force") force = true;
    else if (arg === "--quiet") quiet = true;
    else {
      console.error(`Unknown option ${arg}\n\n${usage}`);
      return 2;
    }
  }
  if (command === "tag") {
    console.log(image ?? (await computerImageRef({ extras })));
    return 0;
  }
  if (command !== "build") {
    console.error(usage);
    return command === undefined || command === "--help" || command === "help" ? 0 : 2;
  }
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort());
  const result = await buildComputerImage({
    image,
    extras,
    force,
    signal: controller.signal,
    onProgress: (p) => {
      if (quiet) return;
      const seconds = (p.elapsedMs / 1000).toFixed(1).padStart(6);
      console.log(`[${seconds}s] ${p.stage.padEnd(10)} ${p.status.padEnd(8)} ${p.message}`);
    },
  });
  console.log(result.image);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`agent-computer-image: ${error.message}`);
    process.exit(1);
  },
);
