/**
 * A Python program, run in a computer as the user whose processes it
 * searches, that counts the processes whose environment, command line or
 * readable memory holds the needle it reads on stdin; it prints how many
 * it could read and how many held the needle, and leaves itself out (it
 * holds the needle too). Tests use it to show a secret is in no process
 * of the bot's (examples/pi-agent/test/pi-secret-login.test.ts,
 * provider-docker's docker-egress-credentials.test.ts), each with a
 * control process that does hold it. Quote-free, so it can go in a
 * single-quoted shell word.
 */
export const PROCESS_MEMORY_SCAN = `import os, sys
needle = sys.stdin.buffer.read()
scanned = hits = 0
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    try:
        blobs = [open(f"/proc/{pid}/environ", "rb").read(), open(f"/proc/{pid}/cmdline", "rb").read()]
        scanned += 1
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if "r" not in line.split()[1] or hi - lo > 256 << 20: continue
                try:
                    mem.seek(lo); blobs.append(mem.read(hi - lo))
                except OSError: pass
    except OSError: continue
    hits += any(needle in b for b in blobs)
print(scanned, hits)`;
