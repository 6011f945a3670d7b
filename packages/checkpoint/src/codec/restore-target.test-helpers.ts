import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { afterEach, beforeEach, expect } from "vitest";
import { digestTree } from "./home-tree.test-helpers.js";

/** The folders of a restore attack test: a home the restore targets and a folder beside it none may touch. */
export interface RestoreTarget {
  /** Holds `home` and `outside`, nothing else. */
  root: string;
  /** A home holding `work/keep.txt`. */
  target: string;
  /** Holds `secret`. */
  outside: string;
}

/**
 * Makes a `RestoreTarget` before each test of the calling file and removes
 * it after (each case's folder goes with it: a run once left 43 in the
 * system's temporary folder). Read its fields inside the tests.
 */
export function useRestoreTarget(prefix: string): RestoreTarget {
  const folders = { root: "", target: "", outside: "" };
  beforeEach(async () => {
    folders.root = await mkdtemp(join(tmpdir(), prefix));
    folders.target = join(folders.root, "home");
    folders.outside = join(folders.root, "outside");
    await mkdir(join(folders.target, "work"), { recursive: true });
    await writeFile(join(folders.target, "work", "keep.txt"), "previous work");
    await mkdir(folders.outside);
    await writeFile(join(folders.outside, "secret"), "do not touch");
  });
  afterEach(() => rm(folders.root, { recursive: true, force: true }));
  return folders;
}

/**
 * Runs a restore that must fail with `code`, and checks it left every byte
 * under `root` as it was and nothing beside; returns the error.
 */
export async function expectRefusedUntouched(
  { root }: RestoreTarget,
  restore: () => Promise<unknown>,
  code: string,
): Promise<AgentComputerError> {
  const before = await digestTree(root);
  const error = await restore().catch((e: unknown) => e);
  expect(error, "the restore should fail").toBeInstanceOf(AgentComputerError);
  expect((error as AgentComputerError).code, (error as Error).message).toBe(code);
  expect(await digestTree(root)).toEqual(before);
  expect((await readdir(root)).sort()).toEqual(["home", "outside"]);
  return error as AgentComputerError;
}
