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
    monkeypatch.setattr("nmtkit.core.plot.save_figure", lambda fig, out, **_: figures.append(fig))
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
    short = png_size(tmp_path / "short.png")
    assert 300 < short[0] <= 504 and 250 < short[1] <= 441  # 0.26 inch a cell: 10 by 8 within 4.2 by 3.68 inches
    alignment_heatmap(words[:10], words[:2], np.eye(2, 10), tmp_path / "two.png")
    two = png_size(tmp_path / "two.png")  # a figure 3 inches high at the least: its lower half was blank
    assert two[0] == short[0] and two[1] < short[1] - 6 * 0.26 * 120 + 10


def test_words_and_names_are_drawn_as_they_are_not_as_mathematics(tmp_path, monkeypatch):
    """A token '$x$' was drawn as an italic x, '$\\alpha$' as α and '\\$' as '$'."""
    from matplotlib.text import Text

    from nmtkit.core import plot

    drawn = []

    def keep(fig, out, **_):
        fig.canvas.draw()
        drawn.extend((t.get_text(), t._preprocess_math(t.get_text())[1]) for t in fig.findobj(Text) if t.get_text())

    monkeypatch.setattr(plot, "save_figure", keep)
    plot.alignment_heatmap(["$x$", "costs", "\\$"], ["$\\alpha$", "a_b"], np.eye(2, 3), tmp_path / "a.png", "$t$")
    rows = [{"lo": 1, "hi": 10, "sentences": 3, "bleu": {"$sys$": 10.0}}]
    plot.bleu_by_length_chart(rows, tmp_path / "b.png", title="$T$")
    texts = dict(drawn)
    assert {"$x$", "\\$", "$\\alpha$", "$t$", "$sys$", "$T$"} <= set(texts)
    assert not any(texts.values())  # none read as mathematics


def test_a_long_sentence_s_heatmap_and_many_length_buckets_say_which_are_labelled(tmp_path, monkeypatch):
    """Every 3rd word of a long pair was labelled, reading as consecutive words; 40 buckets' labels
    ran into one smear."""
    from nmtkit.core import plot

    figures = []
    monkeypatch.setattr(plot, "save_figure", lambda fig, out, **_: figures.append(fig))
    words = [f"w{i}" for i in range(400)]
    plot.alignment_heatmap(words, words, np.eye(400), tmp_path / "a.png", "pair 1")
    plot.alignment_heatmap(words[:5], words[:5], np.eye(5), tmp_path / "b.png", "pair 2")
    rows = [{"lo": 10 * k + 1, "hi": 10 * k + 10, "sentences": 3, "bleu": {"s": 10.0}} for k in range(40)]
    plot.bleu_by_length_chart(rows, tmp_path / "c.png")
    long, short, chart = (f.axes[0] for f in figures)
    every = len(words) // len(long.get_xticks())
    assert every > 1 and long.get_xlabel() == f"pair 1 (one word in {every} labelled)"
    assert short.get_xlabel() == "pair 2"
    labelled = [t.get_text() for t in chart.get_xticklabels() if t.get_text()]
    assert (
        len(labelled) <= 12 and labelled[0] == "1–10\n(3)" and chart.get_xlabel().endswith("one bucket in 4 labelled")
    )


def test_a_run_of_one_validation_has_whole_updates_on_its_axes(tmp_path, monkeypatch):
    from nmtkit.core import plot

    figures = []
    monkeypatch.setattr(plot, "save_figure", lambda fig, out, **_: figures.append(fig))
    training_curves(
        [{"step": 6, "train_nll_token": 5.0, "dev_nll_token": 4.9, "dev_bleu_tok": 0.0}], tmp_path / "c.png"
    )
    figures[0].canvas.draw()
    for ax in figures[0].axes:
        assert list(ax.get_xticks()) == [6], ax.get_xticks()  # 5.7, 6.0, 6.3
    assert not figures[0].axes[1].get_lines()[0].get_clip_on()  # a BLEU of 0: its dots whole on the axis


def test_characters_no_installed_font_draws_are_said_in_one_line(tmp_path, capsys):
    """A Chinese word drew as boxes with a UserWarning of matplotlib's per character (26 of them)."""
    import warnings

    from nmtkit.core import plot

    assert plot.font_families({"Noto Sans CJK SC", "Comic Sans MS", "DejaVu Sans"}) == [
        "DejaVu Sans",
        "Noto Sans CJK SC",
    ]
    if set(plot.FALLBACK_FONTS) & plot._installed_families():
        import pytest

        pytest.skip("a font that draws Chinese is installed here: nothing is missing")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning of matplotlib's that got through would fail here
        plot.alignment_heatmap(["神", "的", "系统"], ["God", "'s"], np.eye(2, 3), tmp_path / "zh.png")
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and f"warning: {tmp_path / 'zh.png'}: 4 characters (的神系统) in no installed font" in err
    )
    assert (tmp_path / "zh.png").exists()


def test_a_home_matplotlib_cannot_write_in_costs_no_lines_on_stderr(tmp_path):
    """-q left matplotlib's two long lines (no config directory, a temporary cache made instead)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    home = tmp_path / "home"
    home.write_text("a file, where a directory would have to be")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MPL"))}
    env |= {"HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    entries = [{"step": 1, "train_nll_token": 2.0}]
    code = f"from nmtkit.core.plot import training_curves; training_curves({entries!r}, {str(tmp_path / 'c.png')!r})"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "" and (tmp_path / "c.png").exists(), done.stderr


def test_a_word_of_thousands_of_characters_leaves_the_heatmap_drawable(tmp_path):
    """The picture is cropped to its labels: one word of 8,000 characters made it 72,237 pixels high."""
    import struct

    from nmtkit.core.plot import alignment_heatmap

    alignment_heatmap(["x" * 8000, "b"], ["c", "y" * 8000], np.eye(2), tmp_path / "w.png")
    width, height = struct.unpack(">II", (tmp_path / "w.png").read_bytes()[16:24])
    assert width < 1000 and height < 1000


def test_another_warning_of_a_drawing_comes_once_not_with_every_picture(tmp_path, monkeypatch):
    import warnings

    from nmtkit.core import plot

    def warns(fig, out, **_):
        warnings.warn("a warning of matplotlib's", UserWarning, stacklevel=1)

    monkeypatch.setattr(plot, "save_figure", warns)
    monkeypatch.setattr(plot, "_SHOWN", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            plot.alignment_heatmap(["a"], ["b"], np.eye(1), tmp_path / "a.png")
    assert [str(w.message) for w in caught] == ["a warning of matplotlib's"]
