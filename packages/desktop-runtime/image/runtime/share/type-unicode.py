# Types characters that are not on the keyboard map: each is bound to a
# spare keycode (rotating over several, so a press never races the rebinding
# of the key before it), given time for clients to see the new map, then
# pressed with XTest. The spare keys are unbound again at the end.
import ctypes
import sys
import time

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
spare = [low.value + i for i in range(count) if all(mapping[i * per.value + j] == 0 for j in range(per.value))][:8]
if not spare:
    sys.exit(3)
used = set()
for index, char in enumerate(sys.stdin.read()):
    point = ord(char)
    keysym = point if (0x20 <= point <= 0x7E or 0xA0 <= point <= 0xFF) else 0x01000000 + point
    keycode = spare[index % len(spare)]
    used.add(keycode)
    x11.XChangeKeyboardMapping(display, keycode, 2, (ctypes.c_ulong * 2)(keysym, keysym), 1)
    x11.XSync(display, 0)
    time.sleep(0.03)
    xtst.XTestFakeKeyEvent(display, keycode, 1, 0)
    xtst.XTestFakeKeyEvent(display, keycode, 0, 0)
    x11.XSync(display, 0)
time.sleep(0.1)
for keycode in used:
    x11.XChangeKeyboardMapping(display, keycode, 2, (ctypes.c_ulong * 2)(0, 0), 1)
x11.XSync(display, 0)
