// Child process of restore-home.crash.test.ts: restores an archive file into
// a target, so the test can kill -9 it at any point.
import { createReadStream } from "node:fs";
import { restoreHome } from "./restore-home.js";

const [archive, target] = process.argv.slice(2) as [string, string];
process.stdout.write("start\n");
await restoreHome(createReadStream(archive), target);
process.stdout.write("done\n");
