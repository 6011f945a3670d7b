// `npm run soak -- <fake|docker> --minutes N`: two scripted bots on one
// Team computer for N minutes (see README.md). Exits 1 when an enforced
// check fails, 2 on a bad command line.
import { writeFile } from "node:fs/promises";
import { runSoak } from "./soak.js";
import { parseSoakOptions, USAGE, UsageError, wantsHelp } from "./soak-options.js";
import { summaryText } from "./summary-text.js";

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (wantsHelp(argv)) {
    console.log(USAGE);
    return 0;
  }
  const options = parseSoakOptions(argv);
  const summary = await runSoak(options, interruptions());
  console.log(summaryText(summary));
  if (options.jsonFile) await writeFile(options.jsonFile, `${JSON.stringify(summary, null, 2)}\n`);
  if (summary.interrupted) return 130;
  return summary.ok ? 0 : 1;
}

/**
 * The first SIGINT or SIGTERM stops the soak after the bots' current steps,
 * so it still checkpoints, restores and deletes its computers; another one
 * a second or more later quits at once. (A Ctrl-C reaches this process
 * twice, from the terminal and relayed by scripts/soak.mjs and tsx.)
 */
function interruptions(): AbortSignal {
  const controller = new AbortController();
  let firstAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!controller.signal.aborted) {
      firstAt = Date.now();
      console.log(`\n${signal}: stopping after the current steps, then cleaning up (again to quit at once)`);
      controller.abort();
    } else if (Date.now() - firstAt > 1000) process.exit(130);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return controller.signal;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    console.error(error);
    process.exit(1);
  },
);
