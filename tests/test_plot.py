"""Training curves: a picture from metrics.jsonl entries, written whole or not at all."""

from nmtkit.core.plot import training_curves


def test_curves_with_and_without_bleu(tmp_path):
    entries = [{"step": s, "train_nll_token": 5 - s / 100} for s in (10, 20, 30)]
    training_curves(entries + [{"step": 30, "dev_nll_token": 4.9}], tmp_path / "a.png")
    training_curves(entries + [{"step": 30, "dev_nll_token": 4.9, "dev_bleu_tok": 1.5}], tmp_path / "b.png")
    for name in ("a.png", "b.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "b.png").stat().st_size > (tmp_path / "a.png").stat().st_size  # two panels
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]  # no temporaries left
