import { afterAll } from "vitest";
import type { ServiceRecorder } from "../emulator/service-recorder.js";

/**
 * When the file's tests end: asserts that no exchange with the emulator
 * left its service's definition (the emulator's `recorder`), then closes
 * the emulator whatever the assertion said, so a violation fails the file
 * and leaves no container behind.
 */
export function closeEmulatorAfterAll(emulator: { recorder: ServiceRecorder; close(): Promise<void> }): void {
  afterAll(async () => {
    try {
      emulator.recorder.assertNoViolations();
    } finally {
      await emulator.close();
    }
  }, 120_000);
}
