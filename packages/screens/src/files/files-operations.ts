import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { AgentComputerError, type Machine, normalizeHomePath } from "@agent-computer/core";
import { type ComputerRecord, type ComputerScope, type Lease, scopeOf } from "@agent-computer/leases";
import { botFolderOf } from "./bot-folder-of.js";
import type { DownloadTarget } from "./download-target.js";
import { streamDownload } from "./files-download.js";
import type { FilesOperationsParts } from "./files-operations-parts.js";
import type { FilesPolicy } from "./files-policy.js";
import { cut, runUploadScript, type UploadSource } from "./files-upload.js";
import { SCRIPT_EXIT, UPLOAD_SCRIPT } from "./home-file-scripts.js";
import { previewText } from "./preview-text.js";

/** One listed entry, as the page shows it. */
interface ListedEntry {
  readonly name: string;
  readonly path: string;
  readonly kind: "file" | "directory" | "symlink";
  readonly size: number;
  readonly modifiedAt: number;
}

/**
 * List, preview, download and upload for one bot's Files window. A running
 * computer answers from its machine; a stopped one is listed and previewed
 * from the home store's latest revision, and is never started for it.
 * Downloads and uploads need it running.
 */
export class FilesOperations {
  constructor(private readonly parts: FilesOperationsParts) {}

  async list(policy: FilesPolicy, path: string) {
    const rel = normalizeHomePath(path);
    const machine = await this.parts.runtime.runningMachine(policy.computerId);
    if (machine) {
      const found = await machine.files.list(rel);
      const entries: ListedEntry[] = [];
      for (const e of found)
        if (e.type !== "other")
          entries.push({ name: e.name, path: e.path, kind: e.type, size: e.size, modifiedAt: e.modifiedAt });
      return { path: rel, source: "computer" as const, entries };
    }
    const homeKey = await this.homeKeyOf(policy);
    const stored = await this.parts.homeStore.list(homeKey, rel);
    const entries = stored.map(({ name, path, kind, size, modifiedAt }) => ({ name, path, kind, size, modifiedAt }));
    return { path: rel, source: "store" as const, entries };
  }

  /** The start of a file, as text when it reads as text; `binary` otherwise. Reads at most the cap plus one byte. */
  async preview(policy: FilesPolicy, path: string) {
    const rel = normalizeHomePath(path);
    const cap = this.parts.previewMaxBytes;
    const machine = await this.parts.runtime.runningMachine(policy.computerId);
    let bytes: Uint8Array;
    let size: number | null = null;
    let source: "computer" | "store";
    if (machine) {
      bytes = await machine.files.read(rel, undefined, { length: cap + 1 });
      source = "computer";
    } else {
      const file = await this.parts.homeStore.read(await this.homeKeyOf(policy), rel, {
        range: { start: 0, end: cap + 1 },
      });
      ({ bytes, size } = file);
      source = "store";
    }
    const truncated = bytes.length > cap;
    const shown = truncated ? bytes.subarray(0, cap) : bytes;
    const text = previewText(shown, truncated);
    return { path: rel, source, size, truncated, binary: text === undefined, ...(text === undefined ? {} : { text }) };
  }

  /** Streams a file of the running computer to `target` (files-download.ts: chunked, a refusal is a status). */
  async download(policy: FilesPolicy, path: string, target: DownloadTarget): Promise<void> {
    const rel = normalizeHomePath(path);
    await streamDownload(await this.machineOf(policy, "download"), rel, target);
  }

  /**
   * Saves an upload (at most the cap) under the bot's folder or an allowed
   * one: its bytes go to a temporary file beside the target as they arrive
   * and it is renamed into place once all came and control still holds
   * (files-upload.ts), so a cut or refused upload leaves no file. Recorded
   * as a `computer.command` event either way.
   */
  async upload(policy: FilesPolicy, control: Lease, path: string, body: Readable, declared: number | undefined) {
    const started = performance.now();
    const rel = normalizeHomePath(path);
    try {
      const size = await this.receiveUpload(policy, control, rel, body, declared);
      this.record(policy, `uploaded ${rel} (${size} bytes)`, started);
      return { path: rel, size };
    } catch (error) {
      const e = AgentComputerError.is(error) ? error : new AgentComputerError("UNAVAILABLE", String(error));
      this.record(policy, `upload ${rel}`, started, e);
      throw e;
    }
  }

  private async receiveUpload(
    policy: FilesPolicy,
    control: Lease,
    rel: string,
    body: Readable,
    declared: number | undefined,
  ): Promise<number> {
    await this.assertUploadFolder(policy, rel);
    const cap = this.parts.uploadMaxBytes;
    if (declared !== undefined && declared > cap) throw overCap(declared, cap);
    await this.parts.runtime.leases.assertCurrent(control);
    const machine = await this.machineOf(policy, "upload");
    // Without a declared length the script cannot know where the bytes end: they are received whole first (at most the cap).
    const source: UploadSource =
      declared === undefined ? { bytes: await readCapped(body, cap) } : { body, size: declared };
    const size = "bytes" in source ? source.bytes.length : source.size;
    const slash = rel.lastIndexOf("/");
    const name = rel.slice(slash + 1);
    const temporary = `.${name}.upload-${randomBytes(6).toString("hex")}`;
    // Written and renamed in the machine by one script that follows no link (home-file-scripts.ts).
    // A name at the home's top (a Private computer's folder) has no folder part.
    const folder = slash < 0 ? "" : rel.slice(0, slash);
    const argv = ["sh", "-c", UPLOAD_SCRIPT, "sh", machine.workspacePath, folder, name, temporary, String(size)];
    // The person's control may have ended while the bytes arrived: checked before the rename.
    const result = await runUploadScript(machine, argv, source, () => this.parts.runtime.leases.assertCurrent(control));
    this.checkScript(result.exitCode, rel);
    return size;
  }

  /** The folder the Files page opens at: the bot's own, as its tools see it (a Private computer's is the home). */
  async homeFolderOf(policy: FilesPolicy): Promise<string> {
    return botFolderOf(policy.botId, await this.scopeOf(policy))[0] as string;
  }

  private async assertUploadFolder(policy: FilesPolicy, rel: string): Promise<void> {
    const folders = this.parts.uploadFolders(policy.botId, await this.scopeOf(policy)).map((f) => normalizeHomePath(f));
    const name = rel.split("/").at(-1) ?? "";
    // "" is the home itself: anything in it may be replaced.
    const inside = (folder: string) => folder === "" || rel.startsWith(`${folder}/`);
    if (name === "" || name.startsWith(".") || !folders.some(inside))
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `Uploads go under ${folders.map((f) => (f === "" ? "the home" : `${f}/`)).join(" or ")} with a name not starting with "."; "${rel}" is not.`,
      );
  }

  private checkScript(exitCode: number | null, rel: string): void {
    if (exitCode === SCRIPT_EXIT.outside)
      throw new AgentComputerError("INVALID_ARGUMENT", `"${rel}" leads out of the home through a link.`);
    if (exitCode === SCRIPT_EXIT.throughLink)
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `"${rel}" passes through a link; uploads follow none. Upload to a real folder, or remove the link first.`,
      );
    if (exitCode === SCRIPT_EXIT.wrongType)
      throw new AgentComputerError("INVALID_ARGUMENT", `"${rel}" is a folder; uploads replace only files.`);
    if (exitCode === SCRIPT_EXIT.notAFolder)
      throw new AgentComputerError("INVALID_ARGUMENT", `A part of "${rel}" before its name is a file, not a folder.`);
    if (exitCode === SCRIPT_EXIT.unconfirmed) throw cut();
    if (exitCode !== 0)
      throw new AgentComputerError("UNAVAILABLE", `Could not save "${rel}" on the computer (exit ${exitCode}).`);
  }

  private async machineOf(policy: FilesPolicy, what: "download" | "upload"): Promise<Machine> {
    const machine = await this.parts.runtime.runningMachine(policy.computerId);
    if (machine) return machine;
    await this.homeKeyOf(policy);
    throw new AgentComputerError(
      "CONFLICT",
      `Computer "${policy.computerId}" is stopped: a ${what} needs it running. Start it (open its screen) and try again.`,
    );
  }

  /** The computer's record: its home key and scope. NOT_FOUND for a computer that no longer exists. */
  private async computerOf(policy: FilesPolicy): Promise<ComputerRecord> {
    const record = await this.parts.runtime.leases.getComputer(policy.computerId);
    if (!record) throw new AgentComputerError("NOT_FOUND", `Computer "${policy.computerId}" does not exist.`);
    return record;
  }

  private async homeKeyOf(policy: FilesPolicy): Promise<string> {
    return (await this.computerOf(policy)).homeKey;
  }

  private async scopeOf(policy: FilesPolicy): Promise<ComputerScope> {
    return scopeOf(await this.computerOf(policy));
  }

  private record(policy: FilesPolicy, summary: string, started: number, error?: AgentComputerError): void {
    this.parts.onActivity?.({
      type: "computer.command",
      tool: "upload_file",
      computerId: policy.computerId,
      botId: policy.botId,
      summary,
      ok: error === undefined,
      ...(error ? { error: { code: error.code, message: error.message } } : {}),
      durationMs: Math.round(performance.now() - started),
      at: this.parts.clock(),
    });
  }
}

function overCap(size: number, cap: number): AgentComputerError {
  return new AgentComputerError("LIMIT_EXCEEDED", `The upload is ${size} bytes, over the ${cap}-byte limit.`);
}

/** The whole body, refused past `cap` or when it breaks off (a cut upload). */
async function readCapped(body: Readable, cap: number): Promise<Buffer<ArrayBuffer>> {
  const chunks: Buffer[] = [];
  let got = 0;
  const done = new Promise<void>((resolve, reject) => {
    // Cut while the checks before ran: its events are gone.
    if (body.destroyed && !body.readableEnded) return reject(cut());
    body.on("data", (chunk: Buffer) => {
      got += chunk.length;
      if (got > cap) {
        reject(overCap(got, cap));
        body.pause();
        return;
      }
      chunks.push(chunk);
    });
    body.on("end", () => resolve());
    body.on("error", (error) => reject(cut(error)));
    body.on("aborted", () => reject(cut()));
    body.on("close", () => {
      if (!body.readableEnded) reject(cut());
    });
  });
  await done;
  return Buffer.concat(chunks, got);
}
