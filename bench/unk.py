"""``make paper-unk``: how many ``<unk>`` s ``translate --replace-unk`` fills with the right word.

A word-vocabulary model writes ``<unk>`` for a word outside its list;
``--replace-unk`` copies into it the source word the model attends to most
(or, with the alignment head, the one the head links). Whether that copy is
right is read off an alignment of the source with its *reference*, made by a
statistical aligner: a copy is right when the reference has that very word,
linked to a source position that holds it. Copying is right for names and
numbers and wrong for a word that needed translating, whatever the
attention, so the count measures the attention where copying can succeed;
how often it lands on the right source word is the part guided alignment
can change.

Both translations are in Moses tokens (``translate --tokenized``) and differ
only in ``--replace-unk``, so each ``<unk>`` of the plain one is the position
its copy fills in the other.

A model that seldom writes ``<unk>`` leaves that count small, so the recipe
also reads the references themselves: each reference word outside the
model's list is an ``<unk>`` that forced decoding (``nmtkit align``) links to
a source word, and that link is checked against the reference alignment,
as is the word a copy would give.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import click

from nmtkit.align.links import read_pharaoh
from nmtkit.core.command import Command
from nmtkit.core.errors import UserError
from nmtkit.core.files import read_lines

UNK = "<unk>"


class _Tally:
    """Counts that add up over sentences, field by field."""

    def add(self, other: _Tally) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class UnkCount(_Tally):
    unks: int = 0  # <unk>s in the plain translation
    right: int = 0  # filled with a word the reference has, linked to a source position holding it
    in_reference: int = 0  # filled with a word found anywhere in the sentence's reference

    def row(self, name: str) -> str:
        return f"| {name} | {self.unks:,} | {_share(self.right, self.unks)} | {self.in_reference:,} |"


@dataclass
class ForcedCount(_Tally):
    outside: int = 0  # reference words outside the model's list: <unk>s under forced decoding
    linked: int = 0  # of them, linked by the reference alignment
    agreed: int = 0  # the model links them to a source word the reference alignment links them to
    copied: int = 0  # the source word the model links them to is the reference word itself

    def row(self, name: str) -> str:
        return (
            f"| {name} | {self.outside:,} | {self.linked:,} | {_share(self.agreed, self.linked)} | "
            f"{_share(self.copied, self.outside)} |"
        )


def _check(links: list[tuple[int, int]], source: list[str], reference: list[str], where: str) -> None:
    for i, j in links:
        if i >= len(source) or j >= len(reference):
            raise UserError(
                f"{where}: link {i}-{j} is outside the sentence pair ({len(source)}, {len(reference)} words)"
            )


def count_line(
    source: list[str],
    reference: list[str],
    links: list[tuple[int, int]],
    plain: list[str],
    replaced: list[str],
    where: str,
) -> UnkCount:
    """One sentence's ``<unk>`` s and how many copies the reference alignment confirms."""
    if len(plain) != len(replaced):
        raise UserError(
            f"{where}: the two translations differ in length; translate both with one search, "
            "--replace-unk the only difference"
        )
    _check(links, source, reference, where)
    linked: dict[int, set[str]] = {}
    for i, j in links:
        linked.setdefault(i, set()).add(reference[j])
    out = UnkCount()
    for tok, word in zip(plain, replaced):
        if tok != UNK:
            continue
        out.unks += 1
        out.in_reference += word in reference
        out.right += any(source[i] == word and word in refs for i, refs in linked.items())
    return out


def forced_line(
    source: list[str], reference: list[str], gold: list[tuple[int, int]], model: list[tuple[int, int]], vocab: set[str]
) -> ForcedCount:
    """For each reference word outside ``vocab``: does the model's link (forced decoding) agree with
    the reference alignment ``gold``, and would a copy of its source word give the reference word?"""
    chosen = {k: i for i, k in model}
    out = ForcedCount()
    for k, word in enumerate(reference):
        if word in vocab:
            continue
        out.outside += 1
        out.linked += any(j == k for _, j in gold)
        if k in chosen:
            out.agreed += (chosen[k], k) in gold
            out.copied += chosen[k] < len(source) and source[chosen[k]] == word
    return out


def _parallel(*paths: Path) -> list[tuple[str, ...]]:
    """The lines of line-aligned files, one tuple a line; one clear error when their counts differ."""
    files = [list(read_lines(p)) for p in paths]
    if len({len(f) for f in files}) != 1:
        raise UserError("line counts differ: " + ", ".join(f"{p} {len(f):,}" for p, f in zip(paths, files)))
    return list(zip(*files))


def count_files(source: Path, reference: Path, links: Path, plain: Path, replaced: Path) -> UnkCount:
    """:func:`count_line` over line-aligned files of Moses tokens and the reference's Pharaoh links."""
    total = UnkCount()
    for n, (src, ref, link, hyp, rep) in enumerate(_parallel(source, reference, links, plain, replaced), 1):
        total.add(
            count_line(
                src.split(), ref.split(), read_pharaoh(link, f"{links}:{n}"), hyp.split(), rep.split(), f"{plain}:{n}"
            )
        )
    return total


def forced_files(source: Path, reference: Path, gold: Path, model: Path, vocab: set[str]) -> ForcedCount:
    """:func:`forced_line` over line-aligned files: Moses tokens and two Pharaoh files."""
    total = ForcedCount()
    for n, (src, ref, g, m) in enumerate(_parallel(source, reference, gold, model), 1):
        src_w, ref_w, gold_links = src.split(), ref.split(), read_pharaoh(g, f"{gold}:{n}")
        _check(gold_links, src_w, ref_w, f"{gold}:{n}")
        total.add(forced_line(src_w, ref_w, gold_links, read_pharaoh(m, f"{model}:{n}"), vocab))
    return total


def _share(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.1f}%)" if whole else f"{part:,} (–)"


@click.command("unk", cls=Command)
@click.option(
    "--source",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Source sentences, Moses tokens.",
)
@click.option(
    "--reference",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Their references, Moses tokens.",
)
@click.option(
    "--links",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Pharaoh links of source with reference (word-align).",
)
@click.option("--runs", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option(
    "--models",
    required=True,
    help="Run names under --runs, space-separated; each holds "
    "test.plain.fr, test.replaced.fr and test.ref.links (nmtkit align of the references).",
)
@click.option(
    "--target-vocab",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The models' target list (a data-bin's vocab.fr.txt).",
)
def main(source: Path, reference: Path, links: Path, runs: Path, models: str, target_vocab: Path) -> None:
    """Print the --replace-unk tables: the <unk>s of each model's translation and of the references,
    checked against the reference's alignment."""
    print("| run | <unk>s | filled with the right word | with a word of the reference |\n|---|---:|---:|---:|")
    for m in models.split():
        print(count_files(source, reference, links, runs / m / "test.plain.fr", runs / m / "test.replaced.fr").row(m))
    vocab = {line.split()[0] for line in read_lines(target_vocab) if line.strip()}
    print(
        "\n| run | reference words outside the list | linked by the reference alignment | "
        "the model links them there | its source word is the reference word |\n|---|---:|---:|---:|---:|"
    )
    for m in models.split():
        print(forced_files(source, reference, links, runs / m / "test.ref.links", vocab).row(m))


if __name__ == "__main__":
    main()
