"""Training curves: a picture from metrics.jsonl entries, written whole or not at all."""

import numpy as np

from nmtkit.core.plot import training_curves


def test_curves_with_and_without_bleu(tmp_path):
    entries = [{"step": s, "train_nll_token": 5 - s / 100} for s in (10, 20, 30)]
    training_curves(entries + [{"step": 30, "dev_nll_token": 4.9}], tmp_path / "a.png")
    training_curves(entries + [{"step": 30, "dev_nll_token": 4.9, "dev_bleu_tok": 1.5}], tmp_path / "b.png")
    for name in ("a.png", "b.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "b.png").stat().st_size > (tmp_path / "a.png").stat().st_size  # two panels
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]  # no temporaries left


def test_a_lone_training_point_is_drawn_and_the_axes_fit_the_numbers(tmp_path, monkeypatch):
    """A run's one logged point was in the legend but not drawn (a line of one point); a dev BLEU
    of 0 throughout ran its axis to -0.04; 20 updates got ticks at 19.25."""
    figures = []
    monkeypatch.setattr("nmtkit.core.plot.save_figure", lambda fig, out: figures.append(fig))
    training_curves(
        [{"step": 20, "train_nll_token": 5.0}, {"step": 20, "dev_nll_token": 4.9, "dev_bleu_tok": 0.0}],
        tmp_path / "c.png",
    )
    nll, bleu = figures[0].axes
    train = nll.get_lines()[0]
    assert train.get_label() == "train" and train.get_marker() == "o"
    assert bleu.get_ylim()[0] == 0
    figures[0].canvas.draw()
    assert all(float(t).is_integer() for t in nll.get_xticks())


def test_a_heatmap_of_a_very_long_sentence_stays_within_a_drawable_size(tmp_path):
    """600 words a side at 0.26 inch a cell asked numpy for 2.6 GiB: cells and labels shrink instead."""
    import struct

    import numpy as np

    from nmtkit.core.plot import alignment_heatmap

    def png_size(path):
        return struct.unpack(">II", path.read_bytes()[16:24])

    words = [f"w{i}" for i in range(600)]
    alignment_heatmap(words, words[:500], np.eye(500, 600), tmp_path / "long.png")
    width, height = png_size(tmp_path / "long.png")
    assert 3000 < width <= 3600 and 2400 < height < width  # 30 inches at 120 dpi, the shorter side less
    alignment_heatmap(words[:10], words[:8], np.eye(8, 10), tmp_path / "short.png")
    assert png_size(tmp_path / "short.png") == (504, 441)  # 0.26 inch a cell: 4.2 by 3.68 inches at 120 dpi


def test_words_and_names_are_drawn_as_they_are_not_as_mathematics(tmp_path, monkeypatch):
    """A token '$x$' was drawn as an italic x, '$\\alpha$' as α and '\\$' as '$'."""
    from matplotlib.text import Text

    from nmtkit.core import plot

    drawn = []

    def keep(fig, out):
        fig.canvas.draw()
        drawn.extend((t.get_text(), t._preprocess_math(t.get_text())[1]) for t in fig.findobj(Text) if t.get_text())

    monkeypatch.setattr(plot, "save_figure", keep)
    plot.alignment_heatmap(["$x$", "costs", "\\$"], ["$\\alpha$", "a_b"], np.eye(2, 3), tmp_path / "a.png", "$t$")
    rows = [{"lo": 1, "hi": 10, "sentences": 3, "bleu": {"$sys$": 10.0}}]
    plot.bleu_by_length_chart(rows, tmp_path / "b.png", title="$T$")
    texts = dict(drawn)
    assert {"$x$", "\\$", "$\\alpha$", "$t$", "$sys$", "$T$"} <= set(texts)
    assert not any(texts.values())  # none read as mathematics
