import type Docker from "dockerode";
import { COMPUTER_LABELS, DISPLAY_LABELS } from "./computer-labels.js";
import { pairNetworkName, removePairNetwork } from "./display-network.js";
import { engineFailure } from "./engine-failure.js";

// A display container (`displayContainer: true`) is created after its
// computer's container (which names it), labelled with that container's
// id, so no display ever exists before its computer does (README, "The
// display in its own container").

/**
 * Removes display containers whose computer's container is gone (removed
 * by hand, or a crash between the two removals of `destroy`); returns
 * their ids. Each one's pair network (display-network.ts) goes with it.
 * Displays are listed before computers: a display listed was
 * created after its computer, so a live pair always shows its computer in
 * the second listing, even while another worker is provisioning it.
 */
export async function removeOrphanDisplays(docker: Docker, signal: AbortSignal): Promise<string[]> {
  try {
    const displays = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [DISPLAY_LABELS.displayOf] }),
      abortSignal: signal,
    });
    if (displays.length === 0) return [];
    const computers = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${COMPUTER_LABELS.managed}=true`] }),
      abortSignal: signal,
    });
    const live = new Set(computers.map((c) => c.Id));
    const orphans = displays.filter((d) => !live.has(d.Labels[DISPLAY_LABELS.displayOf] ?? ""));
    await Promise.all(
      orphans.map(async (display) => {
        const removed = await docker
          .getContainer(display.Id)
          .remove({ force: true })
          .then(() => true)
          .catch(() => false);
        const name = display.Names[0]?.replace(/^\//, "");
        if (removed && name) await removePairNetwork(docker, pairNetworkName(name)).catch(() => {});
      }),
    );
    return orphans.map((d) => d.Id);
  } catch (error) {
    throw engineFailure(error, "remove display containers whose computer is gone");
  }
}
