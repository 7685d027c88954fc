"""The one-screen summary of a binarized corpus, rendered from its manifest.

Pairs and tokens per split, vocabulary sizes, the OOV rate of every split,
what each filter dropped and what each cleaning rule changed, so a user
sees at a glance what the data half of the pipeline made.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table


def corpus_summary(manifest: dict[str, Any]) -> Group:
    src, tgt = manifest["langs"]["src"], manifest["langs"]["tgt"]
    splits: dict[str, Any] = manifest["splits"]
    main = Table(title=f"corpus {src}→{tgt}", title_justify="left")
    for col in ("split", "raw lines", "pairs", f"{src} tokens", f"{tgt} tokens", f"OOV {src}", f"OOV {tgt}"):
        main.add_column(col, justify="left" if col == "split" else "right", no_wrap=True)
    for name, s in splits.items():
        main.add_row(name, f"{s.get('lines', s['sentences']):,}", f"{s['sentences']:,}",
                     f"{s['tokens'].get(src, 0):,}", f"{s['tokens'].get(tgt, 0):,}",
                     f"{100 * s['oov_rate'][src]:.2f}%", f"{100 * s['oov_rate'][tgt]:.2f}%")
    vocab = ", ".join(f"{lang} {v['size']:,}" for lang, v in manifest["vocab"].items())
    bpe = {k: v for k, v in manifest.get("bpe_codes", {}).items() if v}
    info = f"vocabulary: {vocab} (dtype {manifest['dtype']}); BPE: {', '.join(bpe.values()) or 'none'}"

    drops = Table(title="dropped pairs (train)", title_justify="left")
    rules = Table(title="lines changed by cleaning rules", title_justify="left")
    drops.add_column("filter", no_wrap=True)
    drops.add_column("pairs", justify="right")
    rules.add_column("rule", no_wrap=True)
    for name in splits:
        for lang in (src, tgt):
            rules.add_column(f"{name}.{lang}", justify="right", no_wrap=True)
    for name, s in splits.items():
        for reason, n in s.get("dropped", {}).items():
            drops.add_row(reason, f"{n:,}")
    names = sorted({r for s in splits.values() for lang in s.get("rules", {}).values() for r in lang})
    for rule in names:
        rules.add_row(rule, *(f"{s.get('rules', {}).get(lang, {}).get(rule, 0):,}"
                              for s in splits.values() for lang in (src, tgt)))
    return Group(main, info, drops, rules)


def print_summary(corpus_dir: str) -> None:
    from .console import console
    from .data.binarized import Corpus
    console.print(corpus_summary(Corpus(corpus_dir).manifest))


def sample_lines(source: str, hypotheses: str, reference: str, n: int = 5, seed: int = 1) -> str:
    """``n`` lines drawn at random (fixed seed), each source beside its translation and reference,
    as a Markdown table: what a reader looks at before any BLEU."""
    import random

    from .errors import UserError
    from .files import read_lines
    rows = [list(read_lines(p)) for p in (source, hypotheses, reference)]
    if len({len(r) for r in rows}) != 1:
        raise UserError(f"{source}, {hypotheses} and {reference} differ in line count")
    picked = sorted(random.Random(seed).sample(range(len(rows[0])), min(n, len(rows[0]))))
    lines = ["| line | source | nmtkit | reference |", "|---:|---|---|---|"]
    for i in picked:
        cells = (r[i].replace("|", "\\|") for r in rows)
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
