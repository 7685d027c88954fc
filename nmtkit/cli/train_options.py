"""``nmtkit train``'s options, in families: the model, its optimisation, speed, and the run
(budget, validation, what is kept). Defaults come from :class:`ModelConfig` and :class:`TrainConfig`."""

from __future__ import annotations

import click

from ..models.config import (
    ARCHS,
    COVERAGES,
    DEFAULT_PRESET,
    ENCODERS,
    MODEL_PRESETS,
    NEURAL_COVERAGE_DIM,
    READOUTS,
    SCORES,
    WINDOWS,
    ModelConfig,
)
from ..train.config import BEST_BY, COMPILE_MODES, DEFAULT_SCHEDULE, LR_DECAYS, OPTIMIZERS, SCHEDULES, TrainConfig
from .options import options, setting

_M = ModelConfig()
_T = TrainConfig()

model = options(
    setting(
        "--arch",
        _M,
        click.Choice(ARCHS),
        "Bahdanau et al.'s RNNsearch, Cho et al.'s RNNencdec, or Luong et al.'s stacked LSTM.",
    ),
    click.option(
        "--preset",
        type=click.Choice(list(MODEL_PRESETS)),
        default=DEFAULT_PRESET,
        show_default=True,
        help="Model sizes; --emb/--hidden/--align/--maxout/--layers override.",
    ),
    click.option("--emb", type=click.IntRange(1), help="Word embedding size m [paper: 620; luong: 1000]."),
    click.option("--hidden", type=click.IntRange(1), help="Hidden units n [paper: 1000]."),
    click.option(
        "--align", type=click.IntRange(1), help="Alignment model units n' (luong: concat and local-p) [paper: 1000]."
    ),
    click.option("--maxout", type=click.IntRange(1), help="Maxout units l [paper: 500]."),
    click.option("--layers", type=click.IntRange(1), help="luong: LSTM layers in encoder and decoder [paper: 4]."),
    setting("--dropout", _M, click.FloatRange(0, 1, max_open=True), "luong: dropout on the non-recurrent connections."),
    setting(
        "--attention",
        _M,
        click.Choice([*WINDOWS, "none"]),
        "luong: where to attend (local-p: the paper's best single model; local-m aligned best in a "
        "20-minute CPU run; none: the paper's non-attentional base).",
    ),
    setting("--score", _M, click.Choice(SCORES), "luong: the alignment score function."),
    setting("--input-feed/--no-input-feed", _M, None, "luong: feed h̃_{t-1} with the next input word."),
    setting("--reverse-source/--no-reverse-source", _M, None, "luong: read the source backwards."),
    setting("--window", _M, click.IntRange(1), "luong: local attention's half-width D."),
    click.option(
        "--window-renorm/--no-window-renorm",
        default=None,
        help="luong, local-p: divide the Gaussian-scaled weights by their sum [default: on for local-p]. "
        "--no-window-renorm is the paper's exact form, whose weights are left unnormalised: its "
        "predicted position p_t pinned to a sentence end in every Bible run of the docs.",
    ),
    setting("--readout", _M, click.Choice(READOUTS), "Deep output from s_{i-1} (the paper's equation) or s_i."),
    setting(
        "--encoder",
        _M,
        click.Choice(ENCODERS),
        "The appendix's GRU, or torch's fused GRU (cuDNN; reset gate after U s): faster on GPUs.",
    ),
    click.option(
        "--tie-embeddings/--no-tie-embeddings",
        default=False,
        help="Score the output with the target embedding matrix (Press & Wolf 2017): one matrix "
        "fewer; the maxout units then number --emb. Not the paper's [default: off; --schedule cpu: on].",
    ),
    click.option(
        "--layer-norm",
        is_flag=True,
        help="Layer-normalised GRUs (Ba et al. 2016), each product normalised as in Nematus. A "
        "change of model, saved in the checkpoint; not the paper's.",
    ),
    setting(
        "--coverage",
        _M,
        click.Choice(COVERAGES),
        "rnnsearch: a coverage vector the attention reads, against under- and over-translation: Tu et al. "
        "(2016)'s linguistic one (each source word's attention so far over its learnt fertility) or neural "
        f"one (a {NEURAL_COVERAGE_DIM}-unit GRU per source word, fed its attention, its annotation and the "
        "decoder state). Trains through the reference loop, not --fused-steps. Not the paper's.",
    ),
    click.option(
        "--alignment-head",
        is_flag=True,
        help="rnnsearch, with --guided-alignment-weight: train a head beside the attention on the "
        "word links instead of the attention itself; it reads each target word once known "
        "(target foresight, Peter et al. 2017), and align, --alignments and --replace-unk read "
        "it. The translation model gets no gradient from it. Not the paper's.",
    ),
)


optimization = options(
    click.option(
        "--schedule",
        "schedule_name",
        type=click.Choice(SCHEDULES),
        default=DEFAULT_SCHEDULE,
        show_default=True,
        help="Training recipe: Bahdanau et al.'s Appendix B; Luong et al.'s SGD (lr 1, halved each epoch "
        "after the 5th, or 8th with dropout; batch 128; clip 5; 10 or 12 epochs); or cpu, the demo's "
        "for a few CPU cores and a budget (--preset small --tie-embeddings --optimizer adam --lr 5e-3 "
        "--lr-decay cosine --warmup 50 --label-smoothing 0.1 --best-by nll --fused-steps). "
        "Flags override it.",
    ),
    setting(
        "--optimizer",
        _T,
        click.Choice(OPTIMIZERS),
        "Adadelta (rho 0.95, eps 1e-6: the paper's), Adam (fused), or plain SGD.",
    ),
    click.option("--lr", type=float, default=None, help="Learning rate [adadelta, sgd: 1.0; adam: 5e-4]."),
    setting(
        "--decay-after",
        _T,
        click.IntRange(0),
        "Multiply the learning rate by --decay every epoch after this many (0: never).",
    ),
    setting(
        "--lr-decay",
        _T,
        click.Choice(LR_DECAYS),
        "Lower the learning rate to 0 at the end of the budget, linearly or by a cosine (budgeted "
        "training, Li et al. 2020). With --max-minutes alone, the updates that fit are estimated from "
        "the pace so far at every log line.",
    ),
    setting("--warmup", _T, click.IntRange(0), "Raise the learning rate linearly from 0 over the first N updates."),
    setting(
        "--label-smoothing",
        _T,
        click.FloatRange(0, 1, max_open=True),
        "Train toward 1-e on the reference word and e spread over the vocabulary (fairseq and Marian "
        "use 0.1); the logged NLL stays the plain one.",
    ),
    setting(
        "--guided-alignment-weight",
        _T,
        click.FloatRange(0),
        "Guided alignment (Chen et al. 2016, Marian's --guided-alignment): add this times the "
        "attention's cross-entropy with the corpus's word links (preprocess --align-suffix) to each "
        "linked target word's loss, so that the attention aligns as the statistical aligner does "
        "(0: off).",
    ),
    setting("--decay", _T, click.FloatRange(0, 1), "The factor of --decay-after."),
    setting("--clip", _T, click.FloatRange(0), "Gradient L2 norm limit (0: off)."),
    setting(
        "--batch-size",
        _T,
        click.IntRange(1),
        "Sentences per minibatch, in total over all GPUs (the paper's 80): with torchrun each of N "
        "processes takes 1/N of every minibatch, so N changes nothing but the speed.",
    ),
    setting(
        "--max-tokens", _T, click.IntRange(0), "Minibatches by target tokens instead, in total over all GPUs (0: off)."
    ),
    setting(
        "--update-freq",
        _T,
        click.IntRange(1),
        "Accumulate the gradients of N passes per update: an update is N times --batch-size "
        "(or --max-tokens), computed a piece at a time, in 1/N of the memory.",
    ),
    setting(
        "--sampled-softmax",
        _T,
        click.IntRange(0),
        "Jean et al. (2015)'s sampled softmax in training: over the minibatch's target words and "
        "others drawn at random, this many in all (0: the full softmax, as the paper).",
        dest="shortlist",
        old="--shortlist",
    ),
    setting("--pool", _T, click.IntRange(1), "Minibatches per length-sorted pool."),
    setting("--max-len", _T, click.IntRange(0), "Drop longer pairs (30 or 50 in the paper)."),
)


speed = options(
    click.option(
        "--compile",
        "compile",
        is_flag=True,
        help="Compile the recurrences' per-word steps with torch.compile (rnnsearch, rnnencdec): "
        "fused kernels, for GPUs, where the eager step is bound by kernel launches. The first "
        "updates wait for the compiler.",
    ),
    click.option(
        "--compile-mode",
        type=click.Choice(COMPILE_MODES),
        default=_T.compile_mode,
        show_default=True,
        help="torch.compile's mode, with --compile: reduce-overhead replays each step as a CUDA graph "
        "(recorded once per shape: combine with --pad-to-multiple); max-autotune also tunes the kernels.",
    ),
    click.option(
        "--fused-steps/--no-fused-steps",
        default=False,
        help="CPU training: the recurrences (the encoder's GRU, RNNsearch's attentive decoder) as "
        "whole sequences whose backward is written by hand: fewer, larger products, equal to the "
        "reference to rounding. About 1.2x the updates per second of the demo's model on 2 cores "
        "[default: off; --schedule cpu: on].",
    ),
    setting(
        "--pad-to-multiple",
        _T,
        click.IntRange(1),
        "Pad each training batch's source and target lengths up to a multiple of N: fewer shapes "
        "for CUDA graphs and compiled kernels, at the cost of computing the padding.",
    ),
)


run = options(
    setting("--max-updates", _T, click.IntRange(0), "Stop after this many updates (0: no limit)."),
    setting(
        "--max-epochs", _T, click.IntRange(0), "Stop after this many passes over the training pairs (0: no limit)."
    ),
    setting(
        "--max-minutes",
        _T,
        click.FloatRange(0),
        "Stop after this many minutes of training, validations included (0: no limit).",
    ),
    setting(
        "--valid-every", _T, click.IntRange(1), "Validate, and save last.pt (and best.pt when better), every N updates."
    ),
    setting("--valid-max-sentences", _T, click.IntRange(0), "Validate on the first N dev sentences only (0: all)."),
    setting("--valid-bleu/--no-valid-bleu", _T, None, "Greedy dev BLEU at validation."),
    setting(
        "--best-by",
        _T,
        click.Choice(BEST_BY),
        "The dev score that picks best.pt and counts for --patience: greedy BLEU (the paper's), "
        "or NLL (no search needed: with --no-valid-bleu, validation is teacher forcing alone).",
    ),
    setting("--patience", _T, click.IntRange(0), "Validations without improvement before stopping (0: never)."),
    click.option(
        "--keep-validations",
        is_flag=True,
        help="Also keep the model of every validation as SAVE_DIR/update-N.pt (weights only, no "
        "optimizer state): for learning curves, e.g. test BLEU against minutes.",
    ),
    setting(
        "--keep-last",
        _T,
        click.IntRange(0),
        "Keep the models of the last N validations as update-N.pt (weights only; 0: none, or every "
        "one with --keep-validations), e.g. to average them.",
    ),
    setting(
        "--keep-best",
        _T,
        click.IntRange(0),
        "Keep the N best validated models (by --best-by) as best-STEP.pt, weights only.",
    ),
    setting("--log-every", _T, click.IntRange(1), "Log the training loss and speed every N updates."),
    # a run setting, as --save-dir: never in the checkpoint's TrainConfig, so a resumed run may log elsewhere
    click.option(
        "--tensorboard",
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="Also write every entry of metrics.jsonl as TensorBoard scalars into DIR, at its update "
        "(pip install 'nmtkit[tensorboard]').",
    ),
    setting("--seed", _T, int, "Seed of the initial weights, the batch order and dropout."),
    click.option(
        "--init-from",
        type=click.Path(dir_okay=False),
        help="Start from this checkpoint's weights with a fresh optimizer (fine-tuning): same model "
        "flags, same vocabularies. Ignored when SAVE_DIR/last.pt exists (that run resumes).",
    ),
)
