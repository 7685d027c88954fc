"""--max-minutes holds for the whole run, the final validation included."""

from __future__ import annotations

import json
import time

from tests.test_cli import run
from tests.test_corpus import make_corpus

SLOW = 2.0  # seconds each validation is made to take


def test_max_minutes_keeps_the_final_validation_within_the_budget(raw, tmp_path, monkeypatch):
    """Validations made slow (2 s each, on 3 dev pairs): the run keeps one back from its 9 s, so it
    ends within them, where training to the budget and validating after took 12.5 s. The
    estimate comes from a probe before training, then from each validation."""
    from nmtkit.train import loop

    real = loop.validate

    def slow(*args, **kwargs):
        time.sleep(SLOW)
        return real(*args, **kwargs)

    spans = []

    def timed(*args, **kwargs):  # the loop's own time: the clock the budget counts starts with it
        started = time.perf_counter()
        try:
            return real_run(*args, **kwargs)
        finally:
            spans.append(time.perf_counter() - started)

    real_run = loop.run
    monkeypatch.setattr(loop, "validate", slow)
    monkeypatch.setattr(loop, "run", timed)
    make_corpus(raw, tmp_path)
    done = run(
        "train",
        tmp_path / "bin",
        "--save-dir",
        tmp_path / "run",
        "--preset",
        "tiny",
        "--optimizer",
        "adam",
        "--batch-size",
        "2",
        "--max-minutes",
        "0.15",
        "--valid-every",
        "100000",
        "--log-every",
        "10",
        "--threads",
        "1",
        "--device",  # a GPU's first call would warm up outside the probe's time
        "cpu",
    )
    assert done.exit_code == 0, done.output
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert logged[-1]["step"] > 10 and "dev_nll" in logged[-1]  # it trained, then validated once
    # 5 %, and 2 s for what the probe does not time: saving the checkpoints, drawing the first curves
    assert len(spans) == 1 and spans[0] <= 9 * 1.05 + 2.0, spans
