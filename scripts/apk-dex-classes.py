#!/usr/bin/env python3
"""Prints the classes an APK's dex files define, one dotted name a line (java.lang.Object style).

Reads the class_defs of every classes*.dex in the APK (the dex format's header, type_ids and
string_ids, https://source.android.com/docs/core/runtime/dex-format), so scripts/build-apk.sh can
check that what R8 kept is what the manifest and the service files name, from the built APK itself
rather than from R8's own account of it.
Usage: apk-dex-classes.py APK
"""
import re
import struct
import sys
import zipfile


def uleb128(data, pos):
    result, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def classes(dex):
    if not dex.startswith(b"dex\n"):
        raise ValueError("not a dex file")
    string_ids_off = struct.unpack_from("<I", dex, 0x3C)[0]
    type_ids_off = struct.unpack_from("<I", dex, 0x44)[0]
    class_defs_size, class_defs_off = struct.unpack_from("<II", dex, 0x60)
    for i in range(class_defs_size):
        type_idx = struct.unpack_from("<I", dex, class_defs_off + 32 * i)[0]
        string_idx = struct.unpack_from("<I", dex, type_ids_off + 4 * type_idx)[0]
        data_off = struct.unpack_from("<I", dex, string_ids_off + 4 * string_idx)[0]
        _, start = uleb128(dex, data_off)
        end = dex.index(b"\0", start)
        descriptor = dex[start:end].decode("utf-8", errors="replace")  # MUTF-8; class names are ASCII here
        yield descriptor[1:-1].replace("/", ".")  # "Lrps/app/RpsApp;" -> "rps.app.RpsApp"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with zipfile.ZipFile(sys.argv[1]) as apk:
        names = [n for n in apk.namelist() if re.fullmatch(r"classes\d*\.dex", n)]
        if not names:
            sys.exit(f"{sys.argv[1]}: no classes.dex")
        for n in names:
            for c in classes(apk.read(n)):
                print(c)


if __name__ == "__main__":
    main()
