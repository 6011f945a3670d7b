import { CHROMIUM_MANAGED_POLICY_FILE, DISPLAY_APART_CHROMIUM_POLICY } from "@agent-computer/desktop-runtime";
import { type SecondUserDisplay, shellQuote } from "@agent-computer/provider-kit";

/**
 * The display's user. The computer image has one user, `computer` (uid
 * 1000, desktop-runtime/image/Dockerfile), which stays the bot's: its
 * files on the volume are 1000's from every earlier deployment. The
 * display's user is made by the root setup below with a fixed uid and
 * gid, 1001, the first the image leaves free: a deployment is a fresh
 * container (its /etc/passwd the image's again) on the same volume, and
 * the bots' browser profiles there are owned by a number, so every
 * deployment must give the display the same one. `useradd --system` would
 * pick a number by what the image holds, which a new image may change.
 */
export const RAILWAY_DISPLAY_USER = "agent-display";
export const RAILWAY_DISPLAY_OWNER = "1001:1001";
const [DISPLAY_UID, DISPLAY_GID] = RAILWAY_DISPLAY_OWNER.split(":") as [string, string];

/** The display's own home: outside the volume (its programs' configuration, its state folder), made again each deployment. */
const DISPLAY_HOME = `/home/${RAILWAY_DISPLAY_USER}`;

/** Written last by the setup, on the container's own disk: a fresh deployment has none, so its first command sets up again. */
const SETUP_MARKER = "/run/agent-computer-display-ready";
const SETUP_LOCK = "/run/agent-computer-display.lock";

/** How a command whose setup failed ends, and the words on its stderr (the machine turns them into UNAVAILABLE). */
export const SETUP_FAILED = { exit: 87, said: "agent-computer: the display's user could not be set up:" } as const;

/** Root's folder on the volume that imports unpack in (the home's filesystem, so the swap is a rename). */
function stagingParentOf(volumeMountPath: string): string {
  return `${volumeMountPath}/.agent-computer-staging`;
}

/** The bot's folder on the volume for its transfer files: the mount itself is root's. */
export function botTransferFolderOf(volumeMountPath: string): string {
  return `${volumeMountPath}/.agent-computer-transfer`;
}

/** The second-user layout of a Railway computer (provider-kit's SecondUserDisplay). */
export function railwaySecondUserDisplay(botOwner: string, volumeMountPath: string): SecondUserDisplay {
  return {
    user: RAILWAY_DISPLAY_USER,
    home: DISPLAY_HOME,
    botOwner,
    displayOwner: RAILWAY_DISPLAY_OWNER,
    stagingParent: stagingParentOf(volumeMountPath),
  };
}

/**
 * Run as root in each deployment before its first command (the guard
 * below): the display's user and places, which live partly on the
 * container's own disk (the user, its home, /tmp/.X11-unix, the policy:
 * gone with each stop or redeploy) and partly on the volume (kept).
 * - the display's user (RAILWAY_DISPLAY_OWNER) in the bot's group, so it
 *   writes Downloads; root's password locked (the image has no sudo, and
 *   Debian's PAM takes an empty password for `su`);
 * - its home (0700), and /tmp/.X11-unix root's and sticky (a bot that made
 *   it first could swap the display's socket for its own);
 * - the mount root's (the bot's from earlier versions' makeHome): the bot
 *   must not rename the staging folder or the home's neighbours an import
 *   by root renames (checkpoint's IMPORT_ENV); the staging folder root's
 *   (0700), the bot's transfer folder its own;
 * - the home the bot's, `.browser-profiles` the display's (0755) and
 *   Downloads shared through the bot's group (2775); the bot's home is on
 *   the volume, so a link it left there is removed, not followed (no bot
 *   process runs yet in a fresh deployment: the guard runs before any);
 * - the managed Chromium policy of a display apart from the bot.
 * Arguments: the bot's `uid:gid`, the mount, the home, the policy's JSON.
 */
export const SECOND_USER_SETUP = `set -eu
bot=$1 mount=$2 home=$3 policy=$4
gid=$(echo "$bot" | cut -d: -f2)
display=${RAILWAY_DISPLAY_USER}
getent group "$display" >/dev/null || groupadd --gid ${DISPLAY_GID} "$display"
getent passwd "$display" >/dev/null || useradd --uid ${DISPLAY_UID} --gid ${DISPLAY_GID} --no-create-home --home-dir ${DISPLAY_HOME} --shell /usr/sbin/nologin "$display"
usermod -a -G "$(getent group "$gid" | cut -d: -f1)" "$display"
passwd -l root >/dev/null
install -d -o ${DISPLAY_UID} -g ${DISPLAY_GID} -m 700 ${DISPLAY_HOME}
install -d -o root -g root -m 1777 /tmp/.X11-unix
chown root:root /tmp/.X11-unix && chmod 1777 /tmp/.X11-unix
# A folder at $1, never a link or a file the bot left: owner $2, mode $3.
own_dir() {
  if [ -L "$1" ] || { [ -e "$1" ] && [ ! -d "$1" ]; }; then rm -f -- "$1"; fi
  mkdir -p -- "$1" && chown -- "$2" "$1" && chmod -- "$3" "$1"
}
chown root:root "$mount" && chmod 755 "$mount"
staging="${stagingParentOf("$mount")}"
[ ! -e "$staging" ] || [ "$(stat -c %u -- "$staging")" = 0 ] || rm -rf -- "$staging"
own_dir "$staging" root:root 700
own_dir "${botTransferFolderOf("$mount")}" "$bot" 700
own_dir "$home" "$bot" 755
own_dir "$home/.browser-profiles" ${RAILWAY_DISPLAY_OWNER} 755
own_dir "$home/Downloads" "$bot" 2775
install -d -m 755 "$(dirname ${CHROMIUM_MANAGED_POLICY_FILE})"
printf '%s' "$policy" > ${CHROMIUM_MANAGED_POLICY_FILE}
chmod 644 ${CHROMIUM_MANAGED_POLICY_FILE}`;

/** The managed policy of the computer's Chromium: a display apart from the bot, downloads into the home. */
export function railwayChromiumPolicy(workspacePath: string): string {
  return JSON.stringify({ ...DISPLAY_APART_CHROMIUM_POLICY, DownloadDirectory: `${workspacePath}/Downloads` });
}

/**
 * The start of every bridge command where the display is a second user,
 * in root's shell before it drops to the command's user: the setup, once
 * per container (SETUP_MARKER, one at a time under SETUP_LOCK). Railway
 * gives no hook that runs before the exec bridge admits commands, and a
 * stop, a redeploy or a restart may hand out a fresh container, so each
 * command checks; a failed setup ends the command before it runs.
 */
export function setupGuard(bot: string, volumeMountPath: string, home: string): string {
  const setup = [SECOND_USER_SETUP, "second-user-setup", bot, volumeMountPath, home, railwayChromiumPolicy(home)];
  const once = `[ -e ${SETUP_MARKER} ] || { sh -c "$@" && : > ${SETUP_MARKER}; }`;
  const locked = ["flock", SETUP_LOCK, "sh", "-c", once, "setup-once", ...setup].map(shellQuote).join(" ");
  return `[ -e ${SETUP_MARKER} ] || { said=$(${locked} 2>&1) || { printf '%s %s\\n' ${shellQuote(SETUP_FAILED.said)} "$said" >&2; exit ${SETUP_FAILED.exit}; }; }`;
}
