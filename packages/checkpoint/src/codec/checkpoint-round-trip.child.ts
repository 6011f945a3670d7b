// Child process of checkpoint-round-trip.test.ts: pack -> seal -> file ->
// open -> restore, alone in its process so its peak RSS is the codec's.
import { createReadStream, createWriteStream } from "node:fs";
import { pipeline } from "node:stream/promises";
import { openCheckpoint } from "./open-checkpoint.js";
import { packHome } from "./pack-home.js";
import { restoreHome } from "./restore-home.js";
import { sealCheckpoint } from "./seal-checkpoint.js";

const [home, sealedFile, target] = process.argv.slice(2) as [string, string, string];
const key = { dataKey: Buffer.alloc(32, 9), storageId: "round-trip", revision: 1 };
const packed = packHome(home);
await pipeline(sealCheckpoint(packed.tar, key), createWriteStream(sealedFile));
const restored = await restoreHome(openCheckpoint(createReadStream(sealedFile), key), target);
process.stdout.write(
  JSON.stringify({ maxRssBytes: process.resourceUsage().maxRSS * 1024, packed: await packed.stats, restored }),
);
