import { PassThrough, type Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";

/** A tar's end: two zero blocks. The bot's part is written with 512-byte records, so nothing follows them. */
const TAR_END_BYTES = 1024;

/**
 * One archive of a home exported in two parts (HOME_TRANSFER_SCRIPTS'
 * `exportBotPartToFile` and `exportProfilesPartToFile`): the bot's part
 * without its end, then the profiles' part whole. The parts are opened
 * only when read, in turn (`openProfilesPart` after the bot's part ended),
 * so a reader that stops early leaves the second unread. A bot's part that
 * does not end in a tar's end is refused (`UNAVAILABLE`): its export was
 * cut, and a joined archive would hide that.
 */
export function joinHomeParts(botPart: Readable, openProfilesPart: () => Promise<Readable>): Readable {
  const out = new PassThrough();
  let held = Buffer.alloc(0);
  const fail = (error: unknown) => {
    botPart.destroy();
    out.destroy(error instanceof Error ? error : new Error(String(error)));
  };
  botPart.on("data", (chunk: Buffer) => {
    held = Buffer.concat([held, chunk]);
    if (held.length <= TAR_END_BYTES) return;
    const ready = held.subarray(0, held.length - TAR_END_BYTES);
    held = Buffer.from(held.subarray(held.length - TAR_END_BYTES));
    if (!out.write(ready)) {
      botPart.pause();
      out.once("drain", () => botPart.resume());
    }
  });
  botPart.once("error", fail);
  botPart.once("end", () => {
    if (held.length !== TAR_END_BYTES || held.some((byte) => byte !== 0)) {
      fail(new AgentComputerError("UNAVAILABLE", "The home's export ended early: its first part has no tar end."));
      return;
    }
    openProfilesPart().then((profiles) => {
      out.once("close", () => profiles.destroy());
      profiles.once("error", (error) => out.destroy(error));
      profiles.pipe(out);
    }, fail);
  });
  out.once("close", () => botPart.destroy());
  return out;
}
