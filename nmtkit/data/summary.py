"""The one-screen summary of a binarized corpus, rendered from its manifest.

Pairs and tokens per split, vocabulary sizes, the OOV rate of every split,
the pairs with an empty side a split kept, what each filter dropped and what
each cleaning rule changed (each table only where there is a row), so a user
sees at a glance what the data half of the pipeline made.
"""

from __future__ import annotations

from typing import Final

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .manifest import Manifest

# A cell too wide for a narrow terminal goes on, folded, on the next line: cut, a count read 241,0…
FOLD: Final = "fold"


def corpus_summary(manifest: Manifest) -> Group:
    src, tgt = manifest.src_lang, manifest.tgt_lang
    splits = manifest.splits
    main = Table(title=f"corpus {src}→{tgt}", title_justify="left")
    for col in ("split", "raw lines", "pairs", f"{src} tokens", f"{tgt} tokens", f"OOV {src}", f"OOV {tgt}"):
        main.add_column(col, justify="left" if col == "split" else "right", overflow=FOLD)
    for name, s in splits.items():
        main.add_row(
            name,
            f"{s.lines if s.lines is not None else s.sentences:,}",
            f"{s.sentences:,}",
            f"{s.tokens.get(src, 0):,}",
            f"{s.tokens.get(tgt, 0):,}",
            f"{100 * s.oov_rate[src]:.2f}%",
            f"{100 * s.oov_rate[tgt]:.2f}%",
        )
    vocab = ", ".join(f"{lang} {v.size:,}" for lang, v in manifest.vocab.items())
    bpe = dict.fromkeys(v for v in manifest.bpe_codes.values() if v)  # joint codes: one file for both sides
    parts: list[Table | Text] = [
        main,
        Text(f"vocabulary: {vocab} (dtype {manifest.dtype}); subword codes: {', '.join(bpe) or 'none'}"),
    ]

    if empty := {name: s.kept_empty for name, s in splits.items() if s.kept_empty}:
        kept = ", ".join(f"{name} {n:,}" for name, n in empty.items())
        parts.append(Text(f"pairs with an empty side, kept: {kept} (only train's are filtered)"))
    dropped = [(reason, n) for s in splits.values() for reason, n in s.dropped.items()]
    if dropped:
        drops = Table(title="dropped pairs (train)", title_justify="left")
        drops.add_column("filter", overflow=FOLD)
        drops.add_column("pairs", justify="right", overflow=FOLD)
        for reason, n in dropped:
            drops.add_row(reason, f"{n:,}")
        parts.append(drops)
    names = sorted({r for s in splits.values() for lang in s.rules.values() for r in lang})
    if names:
        rules = Table(title="lines changed by cleaning rules", title_justify="left")
        rules.add_column("rule", overflow=FOLD)
        for name in splits:
            for lang in (src, tgt):
                rules.add_column(f"{name}.{lang}", justify="right", overflow=FOLD)
        for rule in names:
            rules.add_row(
                rule, *(f"{s.rules.get(lang, {}).get(rule, 0):,}" for s in splits.values() for lang in (src, tgt))
            )
        parts.append(rules)
    return Group(*parts)
