import { TRANSIENT_PROFILE_NAMES } from "./pack-home.js";

/**
 * The sh scripts that move a home in and out of a machine whose home is a
 * folder inside it (a Kubernetes pod, a hosted sandbox), through the
 * provider's command channel. They run as the machine's user (uid 1000)
 * with GNU find, sort and tar from the computer image, and leave out what
 * `packHome` leaves out, so an export through them is what a checkpoint
 * packs. Kept apart from the TypeScript that drives them so each reads whole.
 */

// The in-pod export leaves out what core's `packHome` leaves out inside
// `.browser-profiles/<profile>/`: one list, core's.

const transientTest = TRANSIENT_PROFILE_NAMES.map((n) => `-name '${n}'`).join(" -o ");

/**
 * Export: directories and regular files only (links, sockets, FIFOs and
 * devices are left out, as `packHome` does), transient profile files left
 * out, in a stable (byte) order, as one GNU tar stream on stdout. Exit 1 of
 * tar means a file changed while read; the archive is still well-formed.
 * Files with holes go as GNU sparse 1.0 in pax (what `packHome` writes and
 * the restore reads, sparse-map.ts), found by SEEK_DATA: without `--sparse`
 * a bot's 15 TiB file of a few bytes was read and sent as 15 TiB of zeros
 * (issue 45, finding 4). atime, ctime and sub-second mtime records are left
 * out, so only long names, big sizes and sparse files get a pax header.
 */
const EXPORT_HOME = exportOf(
  `find . -mindepth 1 \\( -path './.browser-profiles/*/*' \\( ${transientTest} \\) \\) -prune \\
  -o \\( -type d -o -type f \\) -printf '%P\\0'`,
);

/** An export script over the NUL-separated names `list` prints from inside the home; `tar`'s extra options after it. */
function exportOf(list: string, tarOptions = ""): string {
  return `cd -- "$1" 2>/dev/null || exit 66
${list} \\
  | LC_ALL=C sort -z \\
  | tar --null --verbatim-files-from --no-recursion --numeric-owner${tarOptions} \\
    --format=pax --pax-option=delete=atime,delete=ctime,delete=mtime --sparse --sparse-version=1.0 -T - -cf -
s=$?
[ "$s" -le 1 ] || exit "$s"
exit 0`;
}

/**
 * Where the display runs as a user of its own (docs/architecture.md §4,
 * "A second user"), the browser profiles in the home are that user's
 * (0700, as Chromium makes them) and the rest is the bot's: each part is
 * read by its owner, never by root, so a link the bot swaps in mid-export
 * reaches only what that part's reader could read anyway. The bot's part
 * is everything but \`.browser-profiles\`, written with a 512-byte record
 * so that its end (two zero blocks) is its last 1024 bytes exactly; the
 * host drops them and appends the profiles' part, which is one tar.
 */
const EXPORT_BOT_PART = exportOf(
  "find . -mindepth 1 -path ./.browser-profiles -prune -o \\( -type d -o -type f \\) -printf '%P\\0'",
  " --blocking-factor=1",
);
const EXPORT_PROFILES_PART = exportOf(
  `{ [ ! -d .browser-profiles ] || find .browser-profiles \\( -path '.browser-profiles/*/*' \\( ${transientTest} \\) \\) -prune \\
  -o \\( -type d -o -type f \\) -printf '%p\\0'; }`,
);

/**
 * What an import run as root on a machine whose display is a second user
 * sets (HostedMachine, provider-kit): the staging folder's parent, a
 * root-only folder on the home's filesystem (the default, beside the
 * home, is the bot's to rename, and root must not unpack where a link the
 * bot planted points); and the owners (`uid:gid`) the staged tree is given
 * before the swap: the bot's, and the display's for `.browser-profiles`.
 * Unset, the scripts run as the machine's one user as before.
 */
export const IMPORT_ENV = {
  stagingParent: "AGENT_COMPUTER_IMPORT_STAGING",
  homeOwner: "AGENT_COMPUTER_HOME_OWNER",
  profilesOwner: "AGENT_COMPUTER_PROFILES_OWNER",
} as const;

/**
 * Shared by both import steps: names beside the home, and the repair of a
 * swap that an earlier, interrupted import left half done (the home missing
 * but its previous copy there: the previous copy comes back).
 */
const IMPORT_PROLOGUE = `home=$1 tag=$2
parent=\${home%/*} base=\${home##*/}
stagingParent=\${${IMPORT_ENV.stagingParent}:-$parent}
staging="$stagingParent/.$base.import-$tag" previous="$parent/.$base.previous-$tag"
for p in "$parent/.$base.previous-"*; do
  [ -e "$p" ] || continue
  if [ -e "$home" ]; then rm -rf -- "$p"; else mv -T -- "$p" "$home" || exit 74; fi
done
`;

/**
 * Import step 1: extract the (already checked) archive from stdin into a
 * staging folder beside the home. Staging folders of earlier imports that
 * were cut off are removed first. The home is not touched.
 */
const STAGE_HOME = `${IMPORT_PROLOGUE}for s in "$stagingParent/.$base.import-"*; do [ -e "$s" ] && rm -rf -- "$s"; done
mkdir -m 700 -- "$staging" || exit 70
tar -xpf - -C "$staging" --no-same-owner || exit 71
if [ -n "\${${IMPORT_ENV.homeOwner}-}" ]; then
  chown -R -- "$${IMPORT_ENV.homeOwner}" "$staging" || exit 71
  [ ! -d "$staging/.browser-profiles" ] || chown -R -- "$${IMPORT_ENV.profilesOwner}" "$staging/.browser-profiles" || exit 71
fi`;

/**
 * Import step 2, run only after step 1 reported success: the staged tree
 * must hold exactly the files, folders and bytes that were sent (a
 * connection cut at an entry boundary can leave tar content with a short
 * archive), then it replaces the home by two renames.
 */
const SWAP_HOME = `${IMPORT_PROLOGUE}[ -d "$staging" ] || exit 72
f=$(find "$staging" -mindepth 1 -type f -printf . | wc -c)
d=$(find "$staging" -mindepth 1 -type d -printf . | wc -c)
b=$(find "$staging" -mindepth 1 -type f -printf '%s\\n' | awk '{ s += $1 } END { printf "%.0f", s }')
if [ "$f" != "$3" ] || [ "$d" != "$4" ] || [ "$b" != "$5" ]; then
  rm -rf -- "$staging"
  printf 'staged %s files, %s folders, %s bytes; sent %s, %s, %s' "$f" "$d" "$b" "$3" "$4" "$5" >&2
  exit 73
fi
[ -d "$home" ] && chmod --reference="$home" -- "$staging"
if [ -e "$home" ]; then mv -T -- "$home" "$previous" || exit 74; fi
if ! mv -T -- "$staging" "$home"; then mv -T -- "$previous" "$home"; exit 75; fi
rm -rf -- "$previous"`;

/** Removes a staging folder a failed import left (best effort). */
const DISCARD_STAGING = `${IMPORT_PROLOGUE}rm -rf -- "$staging"`;

/** Export into a file ($2), for a provider that downloads files faster than it streams output. */
const toFile = (exportScript: string) => `exec > "$2" || exit 70
${exportScript}`;
const EXPORT_HOME_TO_FILE = toFile(EXPORT_HOME);

/** Import step 1 from an archive uploaded as a file ($3) beside the home; the file goes whatever happens. */
const STAGE_HOME_FROM_FILE = `trap 'rm -f -- "$3"' EXIT
exec < "$3" || exit 70
${STAGE_HOME}`;

/**
 * The scripts, each run as `sh -c <script> <name> <home> ...`: `exportHome`
 * writes the home as a tar stream on stdout; `stageHome` (home, tag) unpacks
 * a checked archive from stdin beside the home; `swapHome` (home, tag, files,
 * folders, bytes) swaps it in once it holds what was sent; `discardStaging`
 * (home, tag) removes what a failed import left. `exportHomeToFile` (home,
 * file) and `stageHomeFromFile` (home, tag, file) do the same through a file
 * beside the home, for providers whose files API is their fast path.
 * `exportBotPartToFile` and `exportProfilesPartToFile` (home, file) are the
 * two parts of an export where the display is a second user, each run as
 * its owner; `joinHomeParts` makes them one archive.
 */
export const HOME_TRANSFER_SCRIPTS = {
  exportHome: EXPORT_HOME,
  exportHomeToFile: EXPORT_HOME_TO_FILE,
  exportBotPartToFile: toFile(EXPORT_BOT_PART),
  exportProfilesPartToFile: toFile(EXPORT_PROFILES_PART),
  stageHome: STAGE_HOME,
  stageHomeFromFile: STAGE_HOME_FROM_FILE,
  swapHome: SWAP_HOME,
  discardStaging: DISCARD_STAGING,
} as const;

/** Exit codes of the scripts above. */
export const HOME_TRANSFER_EXIT = { missingHome: 66, incomplete: 73 } as const;
