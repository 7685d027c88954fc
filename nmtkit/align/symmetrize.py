"""One word alignment from the two directions of a statistical aligner: their intersection, or
grow-diag-final-and (Koehn et al. 2003; Moses' default), which starts from the intersection and
adds union links next to it, then any union link whose words are both still unaligned.

Links are (source word, target word) pairs in both directions' outputs, as eflomal and
fast_align write them (``-r`` links are not transposed).
"""

from __future__ import annotations

import heapq

Link = tuple[int, int]
SYMMETRIZATIONS = ("grow-diag-final-and", "intersection", "forward", "reverse")  # word-align's choices
# (target, source) steps in the order Moses' symal tries them
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward: set[Link], reverse: set[Link]) -> set[Link]:
    """As Moses' symal makes it (``-a=g -d=yes -f=yes -b=yes``), whose order decides which of two
    links competing for a word joins: the links visited target word first, a link added during a
    pass visited in it where it comes after the one growing; then the forward direction's links
    (one a target word), then the reverse one's, each target word first."""
    union, links = forward | reverse, forward & reverse
    sources, targets = {i for i, _ in links}, {j for _, j in links}

    def add(link: Link) -> None:
        links.add(link)
        sources.add(link[0])
        targets.add(link[1])

    grown = True
    while grown:  # grow-diag: until no neighbour of a link can join
        grown = False
        heap = sorted((j, i) for i, j in links)  # target-major, as symal's set of (target, source)
        while heap:
            j, i = heapq.heappop(heap)
            for dj, di in _NEIGHBOURS:
                link = (i + di, j + dj)
                if link in union and link not in links and (link[0] not in sources or link[1] not in targets):
                    add(link)
                    grown = True
                    if (link[1], link[0]) > (j, i):  # still ahead of this pass, as in a std::set
                        heapq.heappush(heap, (link[1], link[0]))
    for direction in (forward, reverse):  # final-and: a link whose two words are both unaligned
        for i, j in sorted(direction - links, key=lambda link: (link[1], link[0])):
            if i not in sources and j not in targets:
                add((i, j))
    return links
