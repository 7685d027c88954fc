"""``nmtkit train``: Appendix B's recipe, read top to bottom.

Minibatches from :mod:`nmtkit.data.batching`; cost = summed target NLL per
sentence, averaged over the minibatch; gradient L2 norm clipped; Adadelta
(ρ=0.95, ε=1e-6), Adam, or plain SGD with Luong et al.'s halving per epoch.
``update_freq`` > 1 accumulates the gradients of that many pieces of each
minibatch before the step. Every ``valid_every`` updates: dev NLL (teacher forcing) and dev BLEU
(greedy search, the code translate uses), ``best.pt`` when the dev score
improves, ``last.pt`` always, early stopping after ``patience`` validations
without improvement. ``best.pt`` holds what translation needs, ``last.pt`` the
whole training state. Metrics go to ``metrics.jsonl`` in the save directory,
and their plot to ``curves.png``. Ctrl-C finishes the current update, saves
``last.pt`` and exits. Several processes (torchrun) train with
DistributedDataParallel, each reading its share of the minibatches.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import checkpoint, distributed
from .checkpoint import Checkpoint, Progress, TextSides, TrainingState
from .config import ModelConfig, TextConfig, TrainConfig
from .console import TrainProgress, debug, log
from .data.batching import Batches, collate, to_device
from .data.binarized import Corpus
from .data.vocab import PAD
from .errors import FormatError, UserError
from .files import atomic_write, remove_stale_temporaries
from .lexicon import Lexicon, lexicon_of
from .models import build_model
from .models.base import Seq2Seq
from .models.loss import shortlist
from .nll import scored_batches
from .pace import TIMED_UPDATES, pace_report, stopping_rule
from .plot import read_metrics, training_curves
from .runlog import MACHINE, machine
from .runtime import Runtime, RuntimeConfig, setup
from .search import greedy
from .text.bpe import merge_subwords
from .window_watch import WindowWatch, stuck_message


def text_sides(corpus: Corpus) -> TextSides:
    """What a checkpoint carries from the corpus so that translate needs nothing else."""
    langs = {"src": corpus.src_lang, "tgt": corpus.tgt_lang}
    codes = {}
    for side, lang in langs.items():
        name = corpus.manifest.get("bpe_codes", {}).get(lang)
        codes[side] = (corpus.path / name).read_text(encoding="utf-8") if name else None
    return TextSides(
        langs=langs, vocab={side: corpus.vocab(lang).tokens for side, lang in langs.items()},
        text={side: TextConfig.from_dict(corpus.manifest["settings"]["text"][lang]) for side, lang in langs.items()},
        bpe_codes=codes, vocab_sha256={lang: corpus.manifest["vocab"][lang]["sha256"] for lang in langs.values()},
        settings_sha256=corpus.manifest.get("settings_sha256"))


@torch.no_grad()
def validate(model: Seq2Seq, corpus: Corpus, cfg: TrainConfig, device: torch.device,
             tgt_tokens: list[str]) -> dict[str, float]:
    """Dev NLL per sentence and per token; tokenized BLEU of greedy output (see :func:`dev_bleu`);
    where local-p's window looks (:mod:`window_watch`)."""
    model.eval()
    src, tgt = corpus.split("valid")
    total, tokens, n = 0.0, 0, 0
    outputs: dict[int, list[int]] = {}
    with WindowWatch(model) as window:
        for idx, enc, loss, count in scored_batches(model, src, tgt, device, cfg.batch_size,
                                                    cfg.valid_max_sentences):
            total, tokens, n = total + float(loss), tokens + count, n + len(idx)   # enc serves the search too
            window.take(src.sizes[idx] + 1, tgt.sizes[idx] + 1)
            if cfg.valid_bleu:
                with window.paused():
                    outputs.update(zip(map(int, idx), greedy(model, enc).tokens))
    model.train()
    metrics = {"dev_nll": total / max(n, 1), "dev_nll_token": total / max(tokens, 1), **window.metrics()}
    if outputs:
        metrics["dev_bleu_tok"] = dev_bleu(corpus, "valid", outputs, tgt_tokens)
    return metrics


def dev_bleu(corpus: Corpus, split: str, outputs: dict[int, list[int]], tgt_tokens: list[str]) -> float:
    """Tokenized BLEU (the paper's, unsmoothed) of output ids per sentence of ``split`` against
    the split's clean tokenized text, so a rare word the vocabulary maps to <unk> counts as
    missed when the model writes <unk>. Corpora binarized without that text fall back to
    references rebuilt from ids, with a warning."""
    from .score import multi_bleu
    keys = sorted(outputs)
    found = corpus.references(split)
    refs: dict[int, str]
    if found is None:
        log(f"{corpus.path}: no reference text for '{split}' (binarized by an older nmtkit): dev BLEU "
            f"is counted against ids, where rare words are <unk>; re-run preprocess --vocab to fix")
        _, tgt = corpus.split(split)
        refs = {k: " ".join(merge_subwords([tgt_tokens[t] for t in tgt[k]])) for k in keys}
    else:
        refs = dict(enumerate(found))
    hyps = [" ".join(merge_subwords([tgt_tokens[t] for t in outputs[k]])) for k in keys]
    return float(multi_bleu().corpus_score(hyps, [[refs[k] for k in keys]]).score)


class _StopFlag:
    """First Ctrl-C asks the loop to stop after the current update; a second one aborts."""

    def __init__(self) -> None:
        self.requested = False

    def __enter__(self) -> "_StopFlag":
        self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, *_: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *_: Any) -> None:
        signal.signal(signal.SIGINT, self.previous)


def _resume(save_dir: Path, corpus: Corpus) -> Checkpoint | None:
    last = save_dir / "last.pt"
    if not last.exists():
        return None
    ckpt = checkpoint.load(last, lazy=False)
    if not ckpt.training.resumable:
        raise FormatError(f"{last}: holds no training state to resume from (use --reset to start over)")
    corpus.check_vocab(ckpt.text.vocab_sha256, f"the checkpoint {last}")
    return ckpt


# Fields a training command derives from its corpus and --max-len, rather than from model flags.
_DERIVED = ("src_vocab", "tgt_vocab", "max_src")


def _same_model(found: ModelConfig, asked: ModelConfig, where: str, remedy: str) -> None:
    """Refuse to continue (or start from) a model other than the one the flags describe, saying
    what to do instead."""
    theirs, ours = found.to_dict(), asked.to_dict()
    diff = [k for k in ours if k not in _DERIVED and theirs.get(k) != ours[k]]
    if diff:
        k = diff[0]
        raise UserError(f"{where} holds a model with --{k.replace('_', '-')} {theirs[k]}, not {ours[k]}"
                        + (f" (and {len(diff) - 1} other difference(s): {', '.join(diff[1:])})" if diff[1:] else "")
                        + f": {remedy}")


def _init_from(path: str, corpus: Corpus) -> Checkpoint:
    ckpt = checkpoint.load(path)
    corpus.check_vocab(ckpt.text.vocab_sha256, f"the checkpoint {path}")
    return ckpt


def dev_score(metrics: dict[str, float], best_by: str) -> float:
    """The validation's score, higher is better: dev BLEU, or minus dev NLL."""
    if best_by == "bleu" and "dev_bleu_tok" in metrics:
        return metrics["dev_bleu_tok"]
    return -metrics["dev_nll"]


def _step_of(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def _prune(save_dir: Path, cfg: TrainConfig, metrics_path: Path) -> None:
    """Keep the ``keep_last`` latest update-N.pt and the ``keep_best`` best best-N.pt."""
    if cfg.keep_last:
        for old in sorted(save_dir.glob("update-*.pt"), key=_step_of)[:-cfg.keep_last]:
            old.unlink()
    if cfg.keep_best:
        scores = {e["step"]: dev_score(e, cfg.best_by) for e in read_metrics(metrics_path) if "dev_nll" in e}
        ranked = sorted(save_dir.glob("best-*.pt"), key=lambda p: scores.get(_step_of(p), -math.inf), reverse=True)
        for worse in ranked[cfg.keep_best:]:
            worse.unlink()


def _rewind_metrics(path: Path, step: int) -> None:
    """On resume, forget metrics logged after the checkpoint's step (they will be redone), and
    a last line torn by a kill."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            break
        if entry["step"] <= step:
            keep.append(line)
    with atomic_write(path) as fh:
        fh.write("".join(line + "\n" for line in keep))


def _counted_out(cfg: TrainConfig, state: Progress, epoch: int) -> bool:
    """Whether the budget in updates or epochs is spent: the same on every process."""
    return bool((cfg.max_updates and state.step >= cfg.max_updates)
                or (cfg.max_epochs and epoch >= cfg.max_epochs))


def _done(cfg: TrainConfig, state: Progress, epoch: int) -> bool:
    """Whether a budget is spent: updates, epochs or minutes."""
    return _counted_out(cfg, state, epoch) or bool(cfg.max_minutes and state.seconds >= 60 * cfg.max_minutes)


def _rng_states(device: torch.device, world: int) -> list[dict[str, torch.Tensor]]:
    """Every process's RNG states, CPU and CUDA (dropout draws from them), for the checkpoint;
    a collective call when several processes train."""
    mine = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        mine["cuda"] = torch.cuda.get_rng_state(device)
    return distributed.gather(mine, world)


def _restore_rng(ranks: list[dict[str, torch.Tensor]], device: torch.device, rank: int, world: int) -> None:
    if len(ranks) != world:
        log(f"the checkpoint holds the RNG states of {len(ranks)} process(es), not {world}: dropout "
            f"draws will differ from an uninterrupted run")
    mine = ranks[rank % len(ranks)]
    torch.set_rng_state(mine["torch"])
    if device.type == "cuda" and "cuda" in mine:
        torch.cuda.set_rng_state(mine["cuda"], device)


class _Window:
    """Training losses (and gradient norms) of the updates since the last report, kept on the device.

    Reading a loss (``float(loss)``) waits for the GPU; so the losses of a
    window are read together, every ``log_every`` updates and before any
    checkpoint, summed over the processes (every rank closes the same
    windows), and a non-finite one is then traced to its update: on every
    rank at once, so that all of them stop together.
    """

    def __init__(self, first_step: int):
        self.first, self.tokens, self.sents, self.all_tokens = first_step, 0, 0, 0
        self.losses: list[torch.Tensor] = []
        self.norms: list[torch.Tensor] = []
        self.started = time.perf_counter()

    def add(self, loss: torch.Tensor, norm: torch.Tensor | None, tokens: int, sents: int, all_tokens: int) -> None:
        """This process's summed loss over its ``tokens`` and ``sents``, the update's gradient
        norm (if clipped); ``all_tokens``: the whole minibatch's, over every process."""
        self.losses.append(loss.detach().float())
        if norm is not None:
            self.norms.append(norm.detach().float())
        self.tokens, self.sents = self.tokens + tokens, self.sents + sents
        self.all_tokens += all_tokens

    def close(self, world: int) -> dict[str, float]:
        """Averages of the window over every process; _Diverged naming the first update whose loss
        (or gradient norm) is not finite."""
        n = len(self.losses)
        if not n:
            return {}
        device = self.losses[0].device
        norms = torch.stack(self.norms) if len(self.norms) == n else torch.zeros(n, device=device)
        counts = torch.tensor([self.tokens, self.sents], dtype=torch.float32, device=device)
        everything = distributed.summed(torch.cat([torch.stack(self.losses), norms, counts]), world).tolist()
        values, grads, (tokens, sents) = everything[:n], everything[n:2 * n], everything[2 * n:]
        for k, (v, g) in enumerate(zip(values, grads)):
            if not (math.isfinite(v) and math.isfinite(g)):
                raise _Diverged(self.first + k, *((v, "loss") if not math.isfinite(v) else (g, "gradient norm")))
        seconds = max(time.perf_counter() - self.started, 1e-9)
        return {"train_nll": sum(values) / max(sents, 1), "train_nll_token": sum(values) / max(tokens, 1),
                "tgt_tokens_per_s": self.all_tokens / seconds, "updates_per_s": n / seconds}


class _Diverged(Exception):
    def __init__(self, step: int, value: float, what: str = "loss"):
        self.step, self.value, self.what = step, value, what


def _optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "adadelta":
        return torch.optim.Adadelta(model.parameters(), lr=cfg.lr, rho=cfg.rho, eps=cfg.eps)
    if cfg.optimizer == "adam":
        # the fused kernel does the same arithmetic in one pass: 7x faster than the default on a
        # 2-core CPU for 22M parameters (18 vs 125 ms a step), 10% of a small-preset update
        return torch.optim.Adam(model.parameters(), lr=cfg.lr, fused=True)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr)
    raise UserError(f"unknown optimizer '{cfg.optimizer}' (adadelta, adam, sgd)")


def learning_rate(cfg: TrainConfig, epoch: int) -> float:
    """The rate for epoch ``epoch`` (from 0): ``lr`` for the first ``decay_after`` epochs, then
    multiplied by ``decay`` once per epoch (Luong et al.: 1, 1, 1, 1, 1, 0.5, 0.25, …). A function
    of the epoch alone, so a resumed run follows the same schedule."""
    if not cfg.decay_after or epoch < cfg.decay_after:
        return cfg.lr
    return cfg.lr * cfg.decay ** (epoch - cfg.decay_after + 1)


def _budget(cfg: TrainConfig, batches_per_epoch: int) -> tuple[float | None, str]:
    """What the progress bar counts toward: updates, minutes or epochs (None: no limit)."""
    if cfg.max_updates:
        return cfg.max_updates, "updates"
    if cfg.max_minutes:
        return cfg.max_minutes * 60, "seconds"
    if cfg.max_epochs:
        return cfg.max_epochs * batches_per_epoch, "updates"
    return None, "updates"


def compiled_note(cfg: TrainConfig) -> str:
    """What the first log line says of the compiled step, if any."""
    if not cfg.compile:
        return ""
    return " (compiled steps)" if cfg.compile_mode == "default" else f" (compiled steps, mode {cfg.compile_mode})"


def describe_batches(cfg: TrainConfig, world: int) -> str:
    """What one update computes on, in total and per process: the first line a run logs."""
    unit = (f"{cfg.max_tokens:,} target tokens" if cfg.max_tokens else f"{cfg.batch_size} sentences")
    total = (f"{cfg.max_tokens * cfg.update_freq:,} target tokens" if cfg.max_tokens
             else f"{cfg.batch_size * cfg.update_freq} sentences")
    padded = f"; lengths padded to multiples of {cfg.pad_to_multiple}" if cfg.pad_to_multiple > 1 else ""
    if world == 1 and cfg.update_freq == 1:
        return f"minibatches of {total}{padded}"
    parts = ([f"{world} processes taking 1/{world} each"] if world > 1 else []) + (
        [f"{cfg.update_freq} accumulated passes of {unit}"] if cfg.update_freq > 1 else [])
    each = ("" if cfg.max_tokens or world == 1 else
            f"; about {cfg.batch_size / world:g} sentences per process and pass")
    return f"minibatches of {total} in total per update ({', '.join(parts)}{each}){padded}"


def _poisoned_step(rank: int) -> int:
    """A test hook: NMTKIT_TEST_NAN_AT="RANK:STEP" makes that rank's loss NaN at that update, as
    a diverging process would (0: never)."""
    found = re.fullmatch(r"(\d+):(\d+)", os.environ.get("NMTKIT_TEST_NAN_AT", ""))
    return int(found.group(2)) if found and int(found.group(1)) == rank else 0


def train(data_dir: Path, save_dir: Path, model_cfg: ModelConfig, cfg: TrainConfig,
          resume: bool = True) -> Progress:
    """Train (or resume) a model; with torchrun, as one of its processes."""
    where = distributed.place()
    runtime = setup(RuntimeConfig(cfg.device, cfg.threads, cfg.bf16, cfg.tf32), where.local_rank, where.local_world)
    distributed.start(where, runtime.device)
    try:
        return _train(data_dir, save_dir, model_cfg, cfg, resume, where, runtime)
    finally:
        distributed.stop()


def _train(data_dir: Path, save_dir: Path, model_cfg: ModelConfig, cfg: TrainConfig, resume: bool,
           where: distributed.Place, runtime: Runtime) -> Progress:
    device = runtime.device
    rank, world, multi = where.rank, where.world, where.distributed
    corpus = Corpus(data_dir)
    for split in ("train", "valid"):
        if split not in corpus.splits:
            raise UserError(f"{data_dir}: has no '{split}' split")
    ckpt = _resume(save_dir, corpus) if resume else None
    if ckpt is not None and cfg.init_from and where.rank == 0:
        log(f"--init-from {cfg.init_from} is ignored: {save_dir / 'last.pt'} exists and that run resumes "
            f"(--reset starts over from {cfg.init_from})")
    init = _init_from(cfg.init_from, corpus) if cfg.init_from and ckpt is None else None
    if ckpt is not None:
        _same_model(ckpt.model, model_cfg, str(save_dir / "last.pt"),
                    "give the flags it was trained with, --reset to start over, or another --save-dir")
    if init is not None:
        _same_model(init.model, model_cfg, str(cfg.init_from),
                    f"give the model flags it was trained with ('nmtkit info {cfg.init_from}' lists them)")
    if ckpt is not None:
        model_cfg, old = ckpt.model, ckpt.training.config
        cfg = TrainConfig(**{**cfg.to_dict(), **{k: getattr(old, k) for k in
                                                 ("seed", "batch_size", "pool", "max_len", "max_tokens",
                                                  "update_freq")}})
    elif init is not None:
        model_cfg = init.model
    else:
        model_cfg = ModelConfig(**{**model_cfg.to_dict(), "src_vocab": len(corpus.vocab(corpus.src_lang)),
                                   "tgt_vocab": len(corpus.vocab(corpus.tgt_lang)),
                                   "max_src": cfg.max_len + 1 if cfg.max_len else model_cfg.max_src})   # + </s>
    torch.manual_seed(cfg.seed)
    model = build_model(model_cfg).to(device)
    sides = text_sides(corpus)
    src, tgt = corpus.split("train")
    batches = Batches(src.sizes, tgt.sizes, cfg.batch_size, cfg.pool, cfg.max_len, cfg.seed,
                      cfg.max_tokens, rank, world, cfg.update_freq)
    opt = _optimizer(model, cfg)
    state = Progress()
    if init is not None:
        checkpoint.load_weights(model, init, str(cfg.init_from))
        log(f"starting from the weights of {cfg.init_from} (update {init.training.progress.step:,} of its run), "
            f"with a fresh optimizer")
    if ckpt is not None:
        run = ckpt.training
        assert run.optimizer is not None and run.batches is not None     # _resume checked
        checkpoint.load_weights(model, ckpt, save_dir / "last.pt")
        try:
            opt.load_state_dict(run.optimizer)
        except (ValueError, KeyError) as err:
            raise FormatError(f"{save_dir / 'last.pt'}: its optimizer state does not fit its model "
                              f"({str(err).splitlines()[0][:120]})") from None
        batches.load_state_dict(run.batches)
        state = Progress(**vars(run.progress))
        _restore_rng(run.rng, device, rank, world)
        if _done(cfg, state, batches.epoch):     # running the same command again changes nothing
            log(f"{save_dir / 'last.pt'} has finished its budget (update {state.step}); nothing to do")
            return state
        log(f"resuming from {save_dir / 'last.pt'} at update {state.step}, epoch {batches.epoch + 1}")
    if cfg.compile:
        model.compile_steps(cfg.compile_mode)
    ddp = torch.nn.parallel.DistributedDataParallel(model) if multi else None
    net: torch.nn.Module = ddp if ddp is not None else model
    if rank == 0:
        debug(f"model {model_cfg.to_dict()}")
        debug(f"training {cfg.to_dict()}")
        log(f"training {model_cfg.arch} ({sum(p.numel() for p in model.parameters()):,} parameters) on "
            f"{device.type}{compiled_note(cfg)}; {describe_batches(cfg, world)}")
        log(stopping_rule(cfg))
    metrics_path = save_dir / "metrics.jsonl"
    if rank == 0:
        save_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(save_dir)        # of a process killed while writing
        if not (save_dir / MACHINE).exists():     # what the speed in metrics.jsonl was measured on
            with atomic_write(save_dir / MACHINE) as fh:
                fh.write(json.dumps(machine()) + "\n")
        _rewind_metrics(metrics_path, state.step)

    lexicon: Lexicon | None = None      # for translate --shortlist: built (seconds) at the first save

    def save(name: str, rng: list[dict[str, torch.Tensor]], resumable: bool = True) -> None:
        """A resumable file holds the optimizer, batch position and RNGs as well (last.pt); the
        others hold what translation needs (plus the run's settings and progress)."""
        nonlocal lexicon
        if rank != 0:
            return
        if lexicon is None:
            lexicon = lexicon_of(corpus)
        run = TrainingState(cfg, Progress(**vars(state)))
        if resumable:
            run.optimizer, run.batches, run.rng = opt.state_dict(), batches.state_dict(), rng
        checkpoint.save(save_dir / name, Checkpoint(model_cfg, model.state_dict(), sides, run, lexicon=lexicon))

    def record(entry: dict[str, Any]) -> None:
        if rank == 0:
            with open(metrics_path, "a") as fh:
                fh.write(json.dumps({"step": state.step, "epoch": batches.drawn_epoch, **entry}) + "\n")

    def close_window() -> dict[str, float]:
        try:
            return window.close(world)
        except _Diverged as bad:
            raise UserError(f"{bad.what} became {bad.value} at update {bad.step}; {save_dir / 'last.pt'} holds "
                            f"the last good state (try a smaller --lr or --clip)") from None

    poison = _poisoned_step(rank)
    graphs = cfg.compile and cfg.compile_mode == "reduce-overhead"

    def one_update(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor | None, int, int]:
        """Forward and backward over this process's share of each piece of minibatch ``idx``,
        then the optimizer step: (summed loss, gradient norm or None, tokens, sentences)."""
        pieces = batches.share(idx)
        loss_total: torch.Tensor | None = None
        ntok = nsent = 0
        opt.zero_grad(set_to_none=True)
        for k, mine in enumerate(pieces):
            if graphs:
                # a new forward: the CUDA graphs' outputs of the last one (its backward done) may be reused
                torch.compiler.cudagraph_mark_step_begin()  # type: ignore[no-untyped-call]
            batch = collate(src, tgt, mine, cfg.pad_to_multiple)
            ntok, nsent = ntok + int((batch["tgt_out"] != PAD).sum()), nsent + len(mine)
            words = (shortlist(batch["tgt_out"], model_cfg.tgt_vocab, cfg.shortlist, PAD).to(device)
                     if cfg.shortlist else None)
            batch = to_device(batch, device)
            # DDP averages the gradients once, after the last piece
            quiet = ddp.no_sync() if ddp is not None and k < len(pieces) - 1 else contextlib.nullcontext()
            try:
                with quiet:
                    with runtime.autocast():
                        loss_sum = net(batch["src"], batch["src_mask"], batch["tgt_in"], batch["tgt_out"], words)
                    if poison == state.step + 1:
                        loss_sum = loss_sum * float("nan")
                    # scaled so that the gradients are those of the whole minibatch's summed NLL
                    # per sentence (DDP divides by the world)
                    (loss_sum * world / len(idx)).backward()
            except torch.cuda.OutOfMemoryError:
                raise UserError(f"out of GPU memory on a batch of {len(mine)} sentences × "
                                f"{batch['tgt_in'].shape[1]} tokens; lower --batch-size (or --max-tokens), "
                                f"raise --update-freq, or lower --max-len") from None
            loss_total = loss_sum.detach() if loss_total is None else loss_total + loss_sum.detach()
        assert loss_total is not None       # share() gives at least one piece
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip) if cfg.clip else None
        opt.step()
        return loss_total, norm, ntok, nsent

    started = time.perf_counter() - state.seconds
    window = _Window(state.step + 1)
    per_epoch = len(batches.epoch_batches(batches.epoch))
    total, unit = _budget(cfg, per_epoch)
    first_step, pace_started = state.step, 0.0
    model.train()
    with _StopFlag() as stop, TrainProgress(total, unit, disable=rank != 0) as bar:
        bar.update(state.step if unit == "updates" else state.seconds)
        for idx in batches:
            if cfg.decay_after:
                for group in opt.param_groups:
                    group["lr"] = learning_rate(cfg, batches.drawn_epoch)
            loss, norm, ntok, nsent = one_update(idx)
            state.step += 1
            state.seconds = time.perf_counter() - started
            if state.step - first_step in (1, 1 + TIMED_UPDATES) and rank == 0:
                if device.type == "cuda":
                    torch.cuda.synchronize(device)      # twice a run: the clock must see the GPU's work
                if state.step - first_step == 1:
                    pace_started = time.perf_counter()
                else:
                    log(pace_report(cfg, (time.perf_counter() - pace_started) / TIMED_UPDATES, per_epoch,
                                    device.type == "cpu"))
            window.add(loss, norm, ntok, nsent, int(tgt.sizes[idx].sum()) + len(idx))
            reporting = state.step % cfg.log_every == 0
            finish = _done(cfg, state, batches.epoch) or stop.requested
            if multi:
                # the clock and Ctrl-C may differ between processes: rank 0 decides for them, at
                # reports only (agreeing waits for the GPU); counted budgets agree by themselves
                soft = reporting and distributed.agree(finish, device)
                finish = _counted_out(cfg, state, batches.epoch) or soft
            checkpointing = state.step % cfg.valid_every == 0 or finish
            rng = _rng_states(device, world) if checkpointing else []   # every rank, at the same updates
            if reporting or checkpointing:                              # every rank: a collective
                entry = {**close_window(), "seconds": state.seconds, "lr": opt.param_groups[0]["lr"]}
                if device.type == "cuda":     # the allocator's own count: no wait for the GPU
                    entry["gpu_peak_mb"] = torch.cuda.max_memory_allocated(device) / 2 ** 20
                window = _Window(state.step + 1)
                record(entry)
                bar.show(state.step, batches.drawn_epoch + 1, entry)
            bar.update(state.step if unit == "updates" else state.seconds)
            if checkpointing and rank == 0:
                metrics = validate(model, corpus, cfg, device, sides.vocab["tgt"])
                score = dev_score(metrics, cfg.best_by)
                record(metrics)
                training_curves(read_metrics(metrics_path), save_dir / "curves.png")
                bar.validated(state.step, metrics)
                stuck = stuck_message(metrics)
                if stuck:
                    log(stuck)
                if score > state.best:
                    state.best, state.bad_evals = score, 0
                    save("best.pt", rng, resumable=False)
                else:
                    state.bad_evals += 1
                save("last.pt", rng)
                if cfg.keep_validations or cfg.keep_last:
                    save(f"update-{state.step}.pt", rng, resumable=False)
                if cfg.keep_best:
                    save(f"best-{state.step}.pt", rng, resumable=False)
                _prune(save_dir, cfg, metrics_path)
                if cfg.patience and state.bad_evals >= cfg.patience:
                    log(f"no improvement in {cfg.patience} validations: stopping")
                    finish = True
            if multi and checkpointing:
                finish = distributed.agree(finish, device)
            if finish:
                if stop.requested:
                    log(f"interrupted: saved {save_dir / 'last.pt'} at update {state.step}")
                break
    return state
