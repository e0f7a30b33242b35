#!/usr/bin/env python3
"""Writes the pseudo-locale en-XA of res/values/strings.xml: every text accented and in brackets
(format arguments and escapes kept), so a screen test under en-XA tells text from strings.xml
apart from text written in the code. Usage: pseudo-locale.py <strings.xml> <output res folder>."""
import re
import sys
import xml.etree.ElementTree as ET

ACCENTS = str.maketrans("aceinosuyACEINOSUY", "áçéîñöšüýÅÇÉÎÑÖŠÜÝ")
KEEP = re.compile(r"(%(?:\d+\$)?[-#+ 0,(]*\d*(?:\.\d+)?[a-zA-Z]|\\.)")


def pseudo(text):
    parts = KEEP.split(text or "")
    return "[" + "".join(p if KEEP.fullmatch(p) else p.translate(ACCENTS) for p in parts) + "]"


def main(source, out):
    tree = ET.parse(source)
    for node in tree.getroot():
        items = [node] if node.tag == "string" else list(node) if node.tag == "plurals" else []
        for item in items:
            item.text = pseudo(item.text)
    import os
    os.makedirs(os.path.join(out, "values-en-rXA"), exist_ok=True)
    tree.write(os.path.join(out, "values-en-rXA", "strings.xml"), encoding="utf-8", xml_declaration=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
