import { readFileSync } from "node:fs";
import { join } from "node:path";
import { computerImageDir } from "./desktop-runtime-root.js";

/**
 * /dev/shm for a computer: Chromium keeps renderer and compositor buffers
 * there, and Docker's 64 MiB default makes tabs crash under load. It is a
 * tmpfs, so only what is used counts against memory.
 */
export const COMPUTER_SHM_BYTES = 1024 * 1024 * 1024;

/**
 * The computer image's PATH (its Dockerfile's `ENV PATH`): the in-computer
 * `desktop` command and its helpers are in /opt/agent-computer/bin. A
 * service that builds a process's environment itself rather than from
 * the image (E2B's envd does: systemd's default PATH) is given this one.
 */
export const COMPUTER_PATH = "/opt/agent-computer/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

let profile: string | undefined;

/**
 * The seccomp profile computers run under, as the JSON text the Engine API
 * takes in `SecurityOpt: ["seccomp=<json>"]`: Docker's default plus
 * clone/unshare for Chromium's namespace sandbox (image/README.md says why).
 */
export function computerSeccompProfile(): string {
  profile ??= JSON.stringify(JSON.parse(readFileSync(join(computerImageDir(), "seccomp", "chromium.json"), "utf8")));
  return profile;
}
