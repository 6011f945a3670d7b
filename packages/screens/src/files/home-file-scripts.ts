/**
 * Shell scripts the files service runs in a running computer, as the
 * provider's own file operations do (core's `exec-home-files.ts`): each
 * path is checked lexically on the host, then resolved INSIDE the machine
 * (`realpath` follows the machine's links, never the host's) and refused
 * when it leaves the home, so a link a bot planted serves nothing outside.
 */
const RESOLVE = `home=$1
inside() {
  t=$(realpath -m -- "$home/$1"; printf x); t=\${t%x}; t=\${t%?}
  case "$t" in "$home"/*) ;; *) exit 64 ;; esac
}
`;

/** `$2`: a regular file inside the home; `$3` bytes of it from byte `$4`, to stdout. */
export const DOWNLOAD_SCRIPT = `${RESOLVE}inside "$2"
[ -f "$t" ] || exit 65
exec dd if="$t" bs=1M iflag=skip_bytes,count_bytes count="$3" skip="$4" status=none`;

/** `$2`: the finished upload beside its target; `$3`: the target. One rename: the target is the old file or the whole new one. */
export const PUBLISH_SCRIPT = `${RESOLVE}inside "$2"; from=$t
inside "$3"
[ -d "$t" ] && exit 65
exec mv -f -T -- "$from" "$t"`;

/** `$2`: a partial upload to drop. */
export const DISCARD_SCRIPT = `${RESOLVE}inside "$2"
exec rm -f -- "$t"`;

export const SCRIPT_EXIT = { outside: 64, wrongType: 65 } as const;
