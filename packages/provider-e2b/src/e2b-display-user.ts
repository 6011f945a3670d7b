import { CHROMIUM_MANAGED_POLICY_FILE, DISPLAY_APART_CHROMIUM_POLICY } from "@agent-computer/desktop-runtime";
import type { SecondUserDisplay } from "@agent-computer/provider-kit";

/**
 * The display's user: the computer image's own `computer` (uid 1000,
 * desktop-runtime/image/Dockerfile), which E2B's template build leaves
 * alone. Its password is locked and it has no sudo.
 */
export const E2B_DISPLAY_USER = "computer";

/** The display's own folder in its home, and the root-only folder imports unpack in (both on the root filesystem). */
const DISPLAY_HOME = "/home/computer/display";
const STAGING_PARENT = "/home/.agent-computer-staging";

/** The second-user layout of an E2B sandbox whose bot runs as `botUser` (provider-kit's SecondUserDisplay). */
export function e2bSecondUserDisplay(botUser: string): SecondUserDisplay {
  return {
    user: E2B_DISPLAY_USER,
    home: DISPLAY_HOME,
    // chown's `name:` is the user and its login group.
    botOwner: `${botUser}:`,
    displayOwner: `${E2B_DISPLAY_USER}:`,
    stagingParent: STAGING_PARENT,
  };
}

/**
 * Run as root once in each new sandbox, before the bot's first command:
 * the display as a second user is worth nothing where the bot's user can
 * become root, and E2B's template build makes its `user` root's equal.
 * What it undoes, from e2b-dev/infra (packages/orchestrator/pkg/template/build):
 * - phases/finalize/configure.sh: `user` in the sudo (or wheel) group, an
 *   empty password (`passwd -d user`), `user ALL=(ALL:ALL) NOPASSWD: ALL` in
 *   /etc/sudoers, and /usr/local world-writable (`chmod -R 777`), where
 *   envd.service's root ExecStartPre and the PATH's first folders live;
 * - phases/base/provision.sh: root's password emptied (`passwd -d root`) and
 *   sshd taking empty passwords: with both passwords locked, neither `su`
 *   (Debian's PAM takes an empty password, `nullok`) nor ssh opens root.
 * Then the display's places: its own home (0700), the staging folder
 * (root's, 0700), /tmp/.X11-unix root's and sticky (a bot that made it
 * first could swap the display's socket for its own), the home the bot's
 * with `.browser-profiles` the display's and Downloads shared through the
 * bot's group (the display joins it), and the managed Chromium policy of a
 * display apart from the bot (DISPLAY_APART_CHROMIUM_POLICY).
 * Arguments: bot user, home, the policy's JSON.
 */
export const SECOND_USER_SETUP = `set -eu
bot=$1 home=$2 policy=$3 display=${E2B_DISPLAY_USER}
sed -i "/^$bot[[:space:]]/d" /etc/sudoers
for group in sudo wheel; do gpasswd -d "$bot" "$group" >/dev/null 2>&1 || true; done
passwd -l root >/dev/null
passwd -l "$bot" >/dev/null
chmod -R go-w /usr/local
usermod -a -G "$bot" "$display"
install -d -o "$display" -g "$display" -m 700 "$(dirname ${DISPLAY_HOME})" ${DISPLAY_HOME}
install -d -o root -g root -m 700 ${STAGING_PARENT}
install -d -o root -g root -m 1777 /tmp/.X11-unix
chown root:root /tmp/.X11-unix && chmod 1777 /tmp/.X11-unix
mkdir -p -- "$home"
chown "$bot:" "$home" && chmod o+x "$(dirname "$home")" "$home"
install -d -o "$display" -g "$display" -m 755 "$home/.browser-profiles"
install -d -o "$bot" -g "$bot" -m 2775 "$home/Downloads"
install -d -m 755 "$(dirname ${CHROMIUM_MANAGED_POLICY_FILE})"
printf '%s' "$policy" > ${CHROMIUM_MANAGED_POLICY_FILE}
chmod 644 ${CHROMIUM_MANAGED_POLICY_FILE}`;

/** The managed policy of the sandbox's Chromium: a display apart from the bot, downloads into the home. */
export function e2bChromiumPolicy(workspacePath: string): string {
  return JSON.stringify({ ...DISPLAY_APART_CHROMIUM_POLICY, DownloadDirectory: `${workspacePath}/Downloads` });
}
