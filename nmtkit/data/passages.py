"""Long test sentences from a verse-aligned test set: consecutive verses of one chapter, joined.

Bible verses are short (most test verses have 15 to 40 words), so the
right half of the paper's Figure 2 (BLEU against source length, up to 80
words) would be empty. A passage joins consecutive verses of the same
chapter, on every side the same way, so it is still a translation of its
source. Passages aim at lengths that cycle through ``targets`` (10, 20, …, 80
source words): a passage closes as soon as it reaches its target, or at the
end of a chapter, so every bucket of the figure gets sentences.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UserError
from ..core.files import atomic_write, read_lines
from ..core.wording import counted

TARGETS = (10, 20, 30, 40, 50, 60, 70, 80)


def chapter(verse_id: str) -> str:
    """``k-l 8:1:3`` → ``8:1``: book and chapter, the unit a passage may not cross."""
    return verse_id.split()[-1].rsplit(":", 1)[0]


def group(ids: list[str], lengths: list[int], targets: tuple[int, ...] = TARGETS) -> list[list[int]]:
    """Consecutive line indices per passage; every line is in exactly one passage."""
    groups: list[list[int]] = []
    current: list[int] = []
    words = 0
    for i, verse in enumerate(ids):
        if current and chapter(verse) != chapter(ids[current[-1]]):
            groups.append(current)
            current, words = [], 0
        current.append(i)
        words += lengths[i]
        if words >= targets[len(groups) % len(targets)]:
            groups.append(current)
            current, words = [], 0
    if current:
        groups.append(current)
    return groups


def write_passages(
    raw: Path, split: str = "test", out: str = "test-long", targets: tuple[int, ...] = TARGETS
) -> dict[str, int]:
    """Write ``raw/<out>.*`` from every ``raw/<split>.*`` file (source, references, ids), each
    passage on one line; return the number of passages per source-length bucket of 10 words."""
    ids = list(read_lines(raw / f"{split}.ids"))
    files = sorted(p for p in raw.glob(f"{split}.*") if p.suffix != ".ids" or p.name == f"{split}.ids")
    texts = {p: list(read_lines(p, allow_empty=True)) for p in files}
    for p, lines in texts.items():
        if len(lines) != len(ids):
            raise UserError(f"{p} has {counted(len(lines), 'line')} but {raw / f'{split}.ids'} has {len(ids)}")
    source = raw / f"{split}.en"
    if source not in texts:
        raise UserError(f"{source}: missing")
    groups = group(ids, [len(line.split()) for line in texts[source]], targets)
    for p, lines in texts.items():
        name = raw / p.name.replace(f"{split}.", f"{out}.", 1)
        joined = [
            f"{ids[g[0]]}-{ids[g[-1]].split()[-1]}" if p.suffix == ".ids" else " ".join(lines[i] for i in g if lines[i])
            for g in groups
        ]
        with atomic_write(name) as fh:
            fh.writelines(line + "\n" for line in joined)
    buckets: dict[str, int] = {}
    for g in groups:
        n = sum(len(texts[source][i].split()) for i in g)
        key = f"{10 * ((n - 1) // 10) + 1}-{10 * ((n - 1) // 10 + 1)}" if n else "0"
        buckets[key] = buckets.get(key, 0) + 1
    return dict(sorted(buckets.items(), key=lambda kv: int(kv[0].split("-")[0])))
