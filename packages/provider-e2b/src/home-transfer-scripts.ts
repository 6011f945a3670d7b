import { TRANSIENT_PROFILE_NAMES } from "@agent-computer/checkpoint";

/**
 * The sh scripts that move a home in and out of a sandbox through envd's
 * process service, as the sandbox user with the image's GNU find, sort and
 * tar. The same steps as the Kubernetes provider's (export in byte order;
 * import staged beside the home, checked, then swapped by two renames), so
 * a cut import leaves the home as it was.
 */

const transientTest = TRANSIENT_PROFILE_NAMES.map((n) => `-name '${n}'`).join(" -o ");

/** Regular files and folders only, transient profile files left out, in byte order, as one tar on stdout. */
export const EXPORT_HOME = `cd -- "$1" 2>/dev/null || exit 66
find . -mindepth 1 \\( -path './.browser-profiles/*/*' \\( ${transientTest} \\) \\) -prune \\
  -o \\( -type d -o -type f \\) -printf '%P\\0' \\
  | LC_ALL=C sort -z \\
  | tar --null --verbatim-files-from --no-recursion --numeric-owner -T - -cf -
s=$?
[ "$s" -le 1 ] || exit "$s"
exit 0`;

const PROLOGUE = `home=$1 tag=$2
parent=\${home%/*} base=\${home##*/}
staging="$parent/.$base.import-$tag" previous="$parent/.$base.previous-$tag"
`;

/** Step 2: the staged tree must hold exactly what was sent; then it replaces the home. */
export const SWAP_HOME = `${PROLOGUE}[ -d "$staging" ] || exit 72
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
export const DISCARD_STAGING = `${PROLOGUE}rm -rf -- "$staging"`;

export const TRANSFER_EXIT = { missingHome: 66, incomplete: 73 } as const;

/**
 * Puts a file uploaded through envd's `/files` (beside the home, on its
 * filesystem) at a home path: the path is resolved INSIDE the sandbox
 * (realpath follows its links) and refused outside the home, with the exit
 * codes of core's ExecHomeFiles; the upload is removed whatever happens.
 */
export const PLACE_UPLOAD = `home=$1 rel=$2 src=$3
trap 'rm -f -- "$src"' EXIT
resolve() {
  t=$(realpath -m -- "$home/$rel"; printf x); t=\${t%x}; t=\${t%?}
  case "$t" in "$home"|"$home"/*) ;; *) exit 64 ;; esac
}
resolve
[ "$t" = "$home" ] && exit 65
[ -d "$t" ] && exit 65
mkdir -p -- "\${t%/*}" 2>/dev/null || exit 68
# The folders just made are real ones, but a link may have appeared meanwhile.
resolve
mv -f -- "$src" "$t" || exit 69`;

/** Step 1 of an import when the archive was uploaded as a file ($3) beside the home. */
export const STAGE_UPLOADED_HOME = `${PROLOGUE}trap 'rm -f -- "$3"' EXIT
for s in "$parent/.$base.import-"*; do [ -e "$s" ] && rm -rf -- "$s"; done
mkdir -p -m 700 -- "$staging" || exit 70
tar -xpf "$3" -C "$staging" --no-same-owner || exit 71`;

/** Export into a file ($2) beside the home, for a download through `/files`. */
export const EXPORT_HOME_TO_FILE = `exec > "$2" || exit 70
${EXPORT_HOME}`;

export const PLACE_EXIT = { outside: 64, wrongType: 65, parentIsFile: 68 } as const;
