# Types characters that are not on the keyboard map: the text goes in runs
# of at most as many distinct characters as there are spare keycodes; each
# run's characters are bound to spare keys at once (a character bound
# already keeps its key; the least recently pressed key is rebound first),
# clients are given time to see the new map, then the run is pressed with
# XTest.
#
# The keys stay bound when this ends: a client that takes the last press
# after an unbind reads no symbol and drops the character (a loaded machine
# dropped the last "ü" of a typed text so). The keys bound here are kept in
# a state file per display and count as spare for the next run.
import ctypes
import os
import sys
import time

STATE = "/tmp/.agent-computer-typed-keys-" + os.environ.get("DISPLAY", ":0").replace("/", "_")

x11 = ctypes.CDLL("libX11.so.6")
xtst = ctypes.CDLL("libXtst.so.6")
x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
x11.XDisplayKeycodes.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
x11.XGetKeyboardMapping.restype = ctypes.POINTER(ctypes.c_ulong)
x11.XGetKeyboardMapping.argtypes = [ctypes.c_void_p, ctypes.c_ubyte, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
x11.XChangeKeyboardMapping.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_ulong), ctypes.c_int]
x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]

display = x11.XOpenDisplay(None)
if not display:
    sys.exit(2)
low, high = ctypes.c_int(), ctypes.c_int()
x11.XDisplayKeycodes(display, ctypes.byref(low), ctypes.byref(high))
per = ctypes.c_int()
count = high.value - low.value + 1
mapping = x11.XGetKeyboardMapping(display, low.value, count, ctypes.byref(per))
try:
    with open(STATE) as f:
        ours = {int(word) for word in f.read().split()}
except (OSError, ValueError):
    ours = set()
def keysyms_of(i):
    return [mapping[i * per.value + j] for j in range(per.value)]
spare = [low.value + i for i in range(count) if low.value + i in ours or not any(keysyms_of(i))][:16]
if not spare:
    sys.exit(3)
bound = {}
for i, keycode in enumerate(range(low.value, high.value + 1)):
    if keycode in spare and any(keysyms_of(i)):
        bound[keysyms_of(i)[0]] = keycode
# Least recently pressed first: unbound keys, then keys bound by earlier runs.
order = [c for c in spare if c not in bound.values()] + [c for c in spare if c in bound.values()]

def keysym_of(char):
    point = ord(char)
    return point if (0x20 <= point <= 0x7E or 0xA0 <= point <= 0xFF) else 0x01000000 + point

def segments(text):
    """Runs of the text with at most len(spare) distinct characters: each run's keys are bound at once."""
    run, distinct = [], set()
    for char in text:
        if char not in distinct and len(distinct) == len(spare):
            yield run
            run, distinct = [], set()
        run.append(char)
        distinct.add(char)
    if run:
        yield run

for run in segments(sys.stdin.read()):
    wanted = list(dict.fromkeys(keysym_of(c) for c in run))
    keep = {bound[k] for k in wanted if k in bound}
    rebound = False
    for keysym in wanted:
        if keysym in bound:
            continue
        keycode = next(c for c in order if c not in keep)
        order.remove(keycode)
        order.append(keycode)
        keep.add(keycode)
        bound = {k: c for k, c in bound.items() if c != keycode}
        bound[keysym] = keycode
        x11.XChangeKeyboardMapping(display, keycode, 2, (ctypes.c_ulong * 2)(keysym, keysym), 1)
        rebound = True
    if rebound:
        # One wait for the whole run's keys: a client reads the new map when
        # it handles MappingNotify, and a loaded machine took longer than
        # 30 ms (the "ä" of a typed text was dropped so).
        x11.XSync(display, 0)
        time.sleep(0.2)
    for char in run:
        keycode = bound[keysym_of(char)]
        order.remove(keycode)
        order.append(keycode)
        xtst.XTestFakeKeyEvent(display, keycode, 1, 0)
        xtst.XTestFakeKeyEvent(display, keycode, 0, 0)
        x11.XSync(display, 0)
try:
    with open(STATE + ".tmp", "w") as f:
        f.write(" ".join(str(c) for c in sorted(set(bound.values()) | (ours & set(spare)))))
    os.rename(STATE + ".tmp", STATE)
except OSError:
    # Unrecorded keys would never count as spare again: unbind them, late.
    time.sleep(0.5)
    for keycode in bound.values():
        x11.XChangeKeyboardMapping(display, keycode, 2, (ctypes.c_ulong * 2)(0, 0), 1)
    x11.XSync(display, 0)
