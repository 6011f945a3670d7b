// The home itself moves with checkpoint's HOME_TRANSFER_SCRIPTS (through a
// file beside the home: envd's /files is this provider's fast path). What
// is E2B's own: placing one uploaded file at a home path.

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

export const PLACE_EXIT = { outside: 64, wrongType: 65, parentIsFile: 68 } as const;
