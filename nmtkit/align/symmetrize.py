"""One word alignment from the two directions of a statistical aligner: their intersection, or
grow-diag-final-and (Koehn et al. 2003; Moses' default), which starts from the intersection and
adds union links next to it, then any union link whose words are both still unaligned.

Links are (source word, target word) pairs in both directions' outputs, as eflomal and
fast_align write them (``-r`` links are not transposed).
"""

from __future__ import annotations

Link = tuple[int, int]
SYMMETRIZATIONS = ("grow-diag-final-and", "intersection", "forward", "reverse")  # word-align's choices
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward: set[Link], reverse: set[Link]) -> set[Link]:
    union, links = forward | reverse, forward & reverse
    sources, targets = {i for i, _ in links}, {j for _, j in links}

    def add(link: Link) -> None:
        links.add(link)
        sources.add(link[0])
        targets.add(link[1])

    grown = True
    while grown:  # grow-diag: until no neighbour of a link can join
        grown = False
        for i, j in sorted(links):
            for di, dj in _NEIGHBOURS:
                link = (i + di, j + dj)
                if link in union and link not in links and (link[0] not in sources or link[1] not in targets):
                    add(link)
                    grown = True
    for direction in (forward, reverse):  # final-and: a link whose two words are both unaligned
        for link in sorted(direction - links):
            if link[0] not in sources and link[1] not in targets:
                add(link)
    return links
