"""The recipes ``bin/bench-sweep`` (:mod:`.bench_sweep`) starts from: for each toolkit, its own
documented training recipe for an RNN with attention (the source named beside it), held to the
demo's model size, and the points of its sweep; and nmtkit's own sweep point.

A point's ``flags`` are the whole of what its run is given beside the data and the budget: the
toolkit's command-line options (nmtkit, Marian, fairseq) or, for Joey NMT, whose runs read a
configuration file, ``section.key=value`` settings over the configuration of
:mod:`.peer_joeynmt`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bench_common import Site, fail, timed
from .demo import CPU_RECIPE
from .demo import train_flags as demo_flags


@dataclass(frozen=True)
class Point:
    toolkit: str
    name: str
    flags: tuple[str, ...]


@dataclass(frozen=True)
class Recipe:
    """A toolkit's recipe (``base``, from ``source``), the learning rates swept over it (``rate``:
    the option, or for Joey NMT and OpenNMT-py the setting, that gives the rate), under each of
    its ``schedules`` where it has several, and other variations of it."""

    toolkit: str
    source: str
    base: tuple[str, ...]
    rate: str
    rates: tuple[str, ...]
    more: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (point name, flags added to or over base)
    schedules: tuple[tuple[str, tuple[str, ...]], ...] = (("", ()),)  # (name, flags over base)

    def at_rate(self, rate: str, schedule: str = "") -> Point:
        given = (f"{self.rate}={rate}",) if "=" in self.base[0] else (self.rate, rate)  # settings, or options
        flags = dict(self.schedules)[schedule]
        return Point(self.toolkit, f"lr {rate}" + (f", {schedule}" if schedule else ""), over(self.base, flags + given))

    @property
    def points(self) -> list[Point]:
        more = [Point(self.toolkit, name, over(self.base, flags)) for name, flags in self.more]
        return [*(self.at_rate(r, s) for s, _ in self.schedules for r in self.rates), *more]

    def point(self, name: str) -> Point:
        """A point of the sweep by name, the rates past the grid's (:meth:`beyond`) included."""
        found = next((p for p in self.points if p.name == name), None)
        return found or self.at_rate(*parts(name))

    def beyond(self, picked: str, swept: Sequence[str]) -> Point | None:
        """The next rate past the end of the rates ``swept`` (points' names) under the ``picked``
        point's schedule when its rate is the highest or the lowest of them, a step of the grid
        further (its last ratio, to one significant digit); None when the pick lies inside."""
        if not re.fullmatch(r"lr [\d.e+-]+(, .+)?", picked) or picked in dict(self.more):
            return None
        rate, schedule = parts(picked)
        if schedule not in dict(self.schedules):
            return None
        named = [parts(n) for n in swept if re.fullmatch(r"lr [\d.e+-]+(, .+)?", n)]
        rates = sorted({float(r) for r, s in named if s == schedule})
        if len(rates) < 2:
            return None
        if float(rate) == rates[-1]:
            return self.at_rate(short(rates[-1] * rates[-1] / rates[-2]), schedule)
        if float(rate) == rates[0]:
            return self.at_rate(short(rates[0] * rates[0] / rates[1]), schedule)
        return None


def parts(name: str) -> tuple[str, str]:
    """A rate point's rate and schedule (``"lr 5e-3, cosine"``: ``("5e-3", "cosine")``)."""
    rate, _, schedule = name.removeprefix("lr ").partition(", ")
    return rate, schedule


def short(rate: float) -> str:
    """A rate to one significant digit, as the recipes write theirs (``2e-2``)."""
    mantissa, exponent = f"{rate:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def over(base: Sequence[str], more: Sequence[str]) -> tuple[str, ...]:
    """``base``'s options with ``more``'s: an option of ``more`` replaces the same option of
    ``base`` with all its values (``--optimizer-params 0.9 0.98 1e-9``); ``key=value`` settings
    likewise by key."""

    def split(flags: Sequence[str]) -> list[list[str]]:
        groups: list[list[str]] = []
        for f in flags:
            if f.startswith("--") or "=" in f or not groups:
                groups.append([f])
            else:
                groups[-1].append(f)
        return groups

    def key(group: list[str]) -> str:
        return group[0].split("=")[0]

    replaced = {key(g): g for g in split(more)}
    out = [replaced.pop(key(g), g) for g in split(base)]
    return tuple(f for g in [*out, *replaced.values()] for f in g)


# nmtkit: the demo's recipe (docs/cpu-training.md): Adam 5e-3, 50 warm-up updates, a cosine to 0 at
# the budget, label smoothing 0.1, tied target embeddings, best.pt by dev NLL; and the same with a
# constant rate after the warm-up
NMTKIT = Recipe(
    "nmtkit",
    "nmtkit's demo recipe, `nmtkit train --schedule cpu` (docs/cpu-training.md)",
    CPU_RECIPE,
    "--lr",
    ("2e-3", "5e-3", "1e-2"),
    (("lr 5e-3, no decay", ("--lr", "5e-3", "--lr-decay", "none")),),
)

# Marian: the University of Edinburgh's WMT 2017 RNN recipe, marian-examples' wmt2017-uedin/run-me.sh:
# --type s2s with layer normalization, synchronous SGD, Adam 3e-4 with (0.9, 0.98, 1e-9), clip 5,
# label smoothing 0.1, exponential smoothing, the inverse square root from update 16,000 (past any
# budget here). Held to the demo's size (one bidirectional GRU layer of 256 and one decoder layer,
# embeddings 256, tied) and without its RNN dropout (no model here has dropout in 20 minutes);
# batches of 80 verses of at most 50 units (with --sync-sgd, Marian splits a batch over its
# --cpu-threads workers: 80 verses an update, as for the others).
MARIAN = Recipe(
    "marian",
    "marian-examples, `wmt2017-uedin/run-me.sh` (Edinburgh's WMT 2017 RNN systems)",
    (
        *"--type s2s --enc-type bidirectional --enc-cell gru --dec-cell gru --enc-depth 1 --dec-depth 1".split(),
        *"--dim-emb 256 --dim-rnn 256 --tied-embeddings --layer-normalization".split(),
        *"--mini-batch 80 --maxi-batch 100 --max-length 50 --sync-sgd --optimizer adam --learn-rate 3e-4".split(),
        *"--optimizer-params 0.9 0.98 1e-09 --clip-norm 5 --lr-decay-inv-sqrt 16000 --exponential-smoothing".split(),
        *"--label-smoothing 0.1 --cost-type ce-mean-words --valid-metrics ce-mean-words --keep-best".split(),
        *"--valid-freq 200 --save-freq 200 --disp-freq 50 --overwrite --seed 42".split(),
    ),
    "--learn-rate",
    ("3e-4", "1e-3", "3e-3"),
)

# fairseq 0.12.2: its LSTM with attention (`--arch lstm`, the nearest it has to a GRU), held to the
# demo's size, trained as its documentation's LSTM tutorial trains one (docs/tutorial_simple_lstm.rst:
# Adam 5e-3, halved when the dev loss stalls at an epoch's end; cross-entropy without smoothing, no
# clipping), without its dropout 0.2; batches of 80 verses of at most 50 units. Its rate swept under
# the schedules fairseq offers for it: the tutorial's plateau (a constant rate within a budget shorter
# than an epoch, as every budget here is: "fixed" would be the same run), the inverse square root
# after 50 warm-up updates, and a cosine from the same warm-up to 0 at the run's last update (a
# sweep point's; for a pick, the updates its point's speed gives in the budget).
FAIRSEQ = Recipe(
    "fairseq",
    "fairseq's documentation, `docs/tutorial_simple_lstm.rst` (its LSTM tutorial)",
    (
        *"--task translation --source-lang en --target-lang fr --arch lstm --encoder-bidirectional".split(),
        *"--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 256 --encoder-hidden-size 256".split(),
        *"--decoder-embed-dim 256 --decoder-hidden-size 256 --decoder-out-embed-dim 256 --decoder-attention 1".split(),
        *"--share-decoder-input-output-embed --dropout 0 --encoder-dropout-in 0 --encoder-dropout-out 0".split(),
        *"--decoder-dropout-in 0 --decoder-dropout-out 0 --optimizer adam --lr 5e-3".split(),
        "--criterion",
        "cross_entropy",
        *"--batch-size 80 --max-source-positions 50 --max-target-positions 50".split(),
        "--skip-invalid-size-inputs-valid-test",
        *"--validate-interval-updates 200 --save-interval-updates 200 --no-epoch-checkpoints".split(),
        *"--best-checkpoint-metric loss --num-workers 0 --seed 42 --cpu --log-format simple --log-interval 50".split(),
    ),
    "--lr",
    ("2e-3", "5e-3", "1e-2"),
    schedules=(  # each schedule's options only: fairseq knows a scheduler's options when it is chosen
        ("plateau", ("--lr-scheduler", "reduce_lr_on_plateau", "--lr-shrink", "0.5")),
        ("inverse sqrt", ("--lr-scheduler", "inverse_sqrt", "--warmup-updates", "50")),
        ("cosine", ("--lr-scheduler", "cosine", "--warmup-updates", "50")),
    ),
)

# Joey NMT 2.3.0 ships no RNN configuration of a real size (configs/rnn_small.yaml and rnn_reverse.yaml
# are toys); its RNN recipe for a real task is its IWSLT'14 De-En BPE configuration of 1.x, the model
# of its benchmarks' RNN row: Adam 2e-4, batches of 80 sentences, loss per token, the rate times 0.7
# after 8 validations without a better dev score, no clipping, no smoothing. Its model (GRU, Bahdanau
# attention, input feeding, bridge) is :data:`.peer_joeynmt.JOEY_MODEL` at the demo's size.
JOEYNMT = Recipe(
    "joeynmt",
    "Joey NMT's `configs/iwslt14_deen_bpe.yaml` (1.x; 2.3.0 ships only toy RNN configurations)",
    (
        "training.optimizer=adam",
        "training.adam_betas=[0.9, 0.999]",
        "training.learning_rate=2e-4",
        "training.learning_rate_min=1e-8",
        "training.scheduling=plateau",
        "training.patience=8",
        "training.decrease_factor=0.7",
    ),
    "training.learning_rate",
    ("2e-4", "1e-3", "5e-3"),
)

# OpenNMT-py 3.5.1: its RNN encoder-decoder with global attention and its documented defaults (opts.py,
# the ones its RNN quickstart trains with): SGD at 1.0, gradients clipped at norm 5, parameters drawn
# from U(-0.1, 0.1), attention "general", input feeding; the rate halved every 10,000 updates from
# update 50,000 (past any budget here). The model (:data:`.peer_opennmt.ONMT_MODEL`) at the demo's
# size, without its dropout 0.3; batches of 80 verses, loss per verse (its default). Beside its SGD
# rates, Adam from 1e-3, the rate of its documentation's other recipes.
OPENNMT = Recipe(
    "opennmt",
    "OpenNMT-py's RNN defaults (`onmt/opts.py`, its quickstart's model)",
    (
        "optim=sgd",
        "learning_rate=1.0",
        "max_grad_norm=5",
        "param_init=0.1",
        "global_attention=general",
        "learning_rate_decay=0.5",
        "start_decay_steps=50000",
        "decay_steps=10000",
    ),
    "learning_rate",
    ("0.5", "1.0", "2.0"),
    tuple(
        (f"lr {r}, adam", ("optim=adam", f"learning_rate={r}", "adam_beta2=0.999")) for r in ("1e-3", "3e-3", "1e-2")
    ),
)

RECIPES = {r.toolkit: r for r in (NMTKIT, MARIAN, FAIRSEQ, JOEYNMT, OPENNMT)}


def nmtkit_sweep_point(site: Site, point: Point, run_dir: Path, updates: int, threads: int) -> dict[str, Any]:
    """nmtkit trained ``updates`` updates with ``point``'s flags (bf16 where the demo takes it),
    validated at the last: its dev NLL per target unit."""
    from nmtkit.train.runlog import RunLog

    bf16 = ["--bf16"] if "--bf16" in demo_flags(1) else []
    cmd = [sys.executable, "-m", "nmtkit", "train", site.data_bin, "--save-dir", run_dir, "--threads", threads]
    cmd += [*point.flags, *bf16, "--max-updates", updates, "--valid-every", updates]
    log = run_dir.parent / f"{run_dir.name}.log"  # a name may hold a dot (lr 1.0)
    run = timed(cmd, log)
    if run["rc"] != 0:
        fail("bench-sweep", f"nmtkit train failed (rc {run['rc']}): see {log}")
    found = RunLog.read(run_dir)
    last = found.validations[-1] if found.validations else None
    return {
        "updates": found.updates,
        "dev_ce": last["dev_nll_token"] if last else None,
        "wall_s": run["wall_s"],
        "peak_rss_mb": run["peak_rss_mb"],
    }
