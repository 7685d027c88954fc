#!/usr/bin/env python3
"""Detokenize (sacremoses, fr) a tokenized hypothesis file and score it with sacrebleu against the raw refs.
Usage: $BENCH_DIR/prep/bin/python bench/peers/score.py HYP [REF=$BENCH_DIR/data/test.raw.fr] [--no-detok]"""

import os
import sys

import sacrebleu
from sacremoses import MosesDetokenizer

args = [a for a in sys.argv[1:] if not a.startswith("--")]
hyp_path = args[0]
ref_path = (
    args[1]
    if len(args) > 1
    else os.path.join(os.environ.get("BENCH_DIR", os.path.expanduser("~/.cache/nmtkit-bench")), "data", "test.raw.fr")
)
hyps = open(hyp_path, encoding="utf-8").read().rstrip("\n").split("\n")
refs = open(ref_path, encoding="utf-8").read().rstrip("\n").split("\n")
assert len(hyps) == len(refs), (len(hyps), len(refs))
if "--no-detok" not in sys.argv:
    md = MosesDetokenizer(lang="fr")
    hyps = [md.detokenize(h.split()) for h in hyps]
    with open(hyp_path + ".detok", "w", encoding="utf-8") as f:
        f.write("\n".join(hyps) + "\n")
bleu = sacrebleu.corpus_bleu(hyps, [refs])
chrf = sacrebleu.corpus_chrf(hyps, [refs])
print(f"BLEU {bleu.score:.2f} chrF {chrf.score:.2f} | {bleu}")
