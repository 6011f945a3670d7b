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
  const summary = await runSoak(options);
  console.log(summaryText(summary));
  if (options.jsonFile) await writeFile(options.jsonFile, `${JSON.stringify(summary, null, 2)}\n`);
  return summary.ok ? 0 : 1;
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
