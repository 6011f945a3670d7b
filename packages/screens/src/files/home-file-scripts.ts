/**
 * Shell scripts the files service runs in a running computer, as the
 * provider's own file operations do (core's `exec-home-files.ts`): each
 * path is checked lexically on the host, then resolved INSIDE the machine
 * (`realpath` follows the machine's links, never the host's) and refused
 * when it leaves the home, so a link a bot planted serves nothing outside.
 * An upload follows no link at all (UPLOAD_SCRIPT).
 */
const RESOLVE = `home=$1
inside() {
  t=$(realpath -m -- "$home/$1"; printf x); t=\${t%x}; t=\${t%?}
  case "$t" in "$home"/*) ;; *) exit 64 ;; esac
}
`;

/**
 * `$2`: a regular file inside the home; `$3` bytes of it from byte `$4`, to
 * stdout. From byte 0 the file's size goes to stderr first (and caps the
 * count), so the host knows where the file ends without a command that
 * reads nothing, and sends the file as long as it was then.
 */
export const DOWNLOAD_SCRIPT = `${RESOLVE}inside "$2"
[ -e "$t" ] || exit 67
[ -f "$t" ] || exit 65
count=$3
if [ "$4" = 0 ]; then
  size=$(stat -c %s -- "$t") || exit 67
  printf '%s\\n' "$size" >&2
  [ "$size" -lt "$count" ] && count=$size
fi
exec dd if="$t" bs=1M iflag=skip_bytes,count_bytes count="$count" skip="$4" status=none`;

/**
 * An upload, its bytes on stdin as they reach the host. `$2`: the target's
 * folder, home-relative; `$3`: the file's name in it; `$4`: a temporary
 * name beside it; `$5`: how many bytes the upload has. Nothing is
 * resolved through a link: the script walks from the home one folder at a
 * time, refusing a link at any of them (a bot's link from its folder into
 * another bot's overwrote that bot's file), making missing folders, then
 * checks it stands where the names say (a folder swapped for a link
 * mid-walk, or moved away since, fails that: `cd -P .` asks the kernel
 * again, where dash's `pwd -P` answers the path it remembered, and
 * needs no subshell). The bytes go to a new file, never an existing one
 * or a link (dd's O_EXCL and O_NOFOLLOW). After them the host sends the
 * line `ok` only once all `$5` bytes arrived and the person still has
 * control (files-upload.ts); without it (a cut upload, control lost) the
 * temporary file is removed. The folder is checked again (the bytes may
 * have taken a while), then the file is renamed over the target: rename
 * replaces a link that appeared since, never follows it, and the target is
 * the old file or the whole new one. Any refusal leaves no file behind.
 */
export const UPLOAD_SCRIPT = `home=$1 folder=$2 name=$3 temporary=$4 size=$5
here() { cd -P . 2>/dev/null && [ "$PWD" = "$expected" ]; }
cd -P -- "$home" || exit 70
expected=$PWD
set -f
IFS=/
for part in $folder; do
  case "$part" in ""|.|..) exit 64 ;; esac
  [ -L "$part" ] && exit 66
  [ -e "$part" ] || mkdir -- "$part" 2>/dev/null || [ -d "$part" ] || exit 68
  [ -L "$part" ] && exit 66
  cd -P -- "$part" 2>/dev/null || exit 68
  expected=$expected/$part
done
unset IFS
here || exit 66
[ -L "$name" ] && exit 66
[ -d "$name" ] && exit 65
dd of="$temporary" conv=excl oflag=nofollow iflag=fullblock,count_bytes count="$size" bs=64K status=none 2>/dev/null || { rm -f -- "$temporary"; exit 69; }
IFS= read -r verdict || verdict=
[ "$verdict" = ok ] || { rm -f -- "$temporary"; exit 71; }
here || { rm -f -- "$temporary"; exit 66; }
mv -f -T -- "$temporary" "$name" || { rm -f -- "$temporary"; exit 69; }`;

/** What the scripts' exit codes mean. */
export const SCRIPT_EXIT = {
  outside: 64,
  wrongType: 65,
  throughLink: 66,
  missing: 67,
  notAFolder: 68,
  unconfirmed: 71,
} as const;
