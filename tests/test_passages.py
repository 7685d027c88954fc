"""Long test passages: consecutive verses of one chapter joined the same way on every side."""

from nmtkit.data.passages import group, write_passages


def test_groups_cover_every_line_once_and_never_cross_a_chapter():
    ids = [f"k-l 8:1:{v}" for v in range(1, 7)] + [f"k-l 8:2:{v}" for v in range(1, 4)]
    lengths = [6, 6, 6, 30, 4, 4, 5, 5, 5]
    groups = group(ids, lengths, targets=(10, 20))
    assert [i for g in groups for i in g] == list(range(len(ids)))
    assert all(len({ids[i].split()[-1].rsplit(":", 1)[0] for i in g}) == 1 for g in groups)
    assert groups == [[0, 1], [2, 3], [4, 5], [6, 7, 8]]  # 12 ≥ 10, 36 ≥ 20, chapter end, 15 < 20 at the end


def test_write_passages_joins_sources_references_and_ids_alike(tmp_path):
    ids = [f"k-l 8:1:{v}" for v in range(1, 5)]
    (tmp_path / "test.ids").write_text("".join(i + "\n" for i in ids))
    (tmp_path / "test.en").write_text("a b c\nd e f g h i j k\nl\nm n\n")
    (tmp_path / "test.fr").write_text("A\nB\nC\nD\n")
    (tmp_path / "test.ref-darby.fr").write_text("a\nb\nc\nd\n")
    buckets = write_passages(tmp_path, targets=(5,))
    assert (tmp_path / "test-long.en").read_text() == "a b c d e f g h i j k\nl m n\n"
    assert (tmp_path / "test-long.fr").read_text() == "A B\nC D\n"
    assert (tmp_path / "test-long.ref-darby.fr").read_text() == "a b\nc d\n"
    assert (tmp_path / "test-long.ids").read_text() == "k-l 8:1:1-8:1:2\nk-l 8:1:3-8:1:4\n"
    assert buckets == {"1-10": 1, "11-20": 1}
