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
const EXPORT_HOME = `cd -- "$1" 2>/dev/null || exit 66
find . -mindepth 1 \\( -path './.browser-profiles/*/*' \\( ${transientTest} \\) \\) -prune \\
  -o \\( -type d -o -type f \\) -printf '%P\\0' \\
  | LC_ALL=C sort -z \\
  | tar --null --verbatim-files-from --no-recursion --numeric-owner \\
    --format=pax --pax-option=delete=atime,delete=ctime,delete=mtime --sparse --sparse-version=1.0 -T - -cf -
s=$?
[ "$s" -le 1 ] || exit "$s"
exit 0`;

/**
 * Shared by both import steps: names beside the home, and the repair of a
 * swap that an earlier, interrupted import left half done (the home missing
 * but its previous copy there: the previous copy comes back).
 */
const IMPORT_PROLOGUE = `home=$1 tag=$2
parent=\${home%/*} base=\${home##*/}
staging="$parent/.$base.import-$tag" previous="$parent/.$base.previous-$tag"
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
const STAGE_HOME = `${IMPORT_PROLOGUE}for s in "$parent/.$base.import-"*; do [ -e "$s" ] && rm -rf -- "$s"; done
mkdir -m 700 -- "$staging" || exit 70
tar -xpf - -C "$staging" --no-same-owner || exit 71`;

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

/** Export into a file ($2) beside the home, for a provider that downloads files faster than it streams output. */
const EXPORT_HOME_TO_FILE = `exec > "$2" || exit 70
${EXPORT_HOME}`;

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
 */
export const HOME_TRANSFER_SCRIPTS = {
  exportHome: EXPORT_HOME,
  exportHomeToFile: EXPORT_HOME_TO_FILE,
  stageHome: STAGE_HOME,
  stageHomeFromFile: STAGE_HOME_FROM_FILE,
  swapHome: SWAP_HOME,
  discardStaging: DISCARD_STAGING,
} as const;

/** Exit codes of the scripts above. */
export const HOME_TRANSFER_EXIT = { missingHome: 66, incomplete: 73 } as const;
