"""The one-file checkpoint, and the only module that knows its layout.

A checkpoint is everything ``translate`` needs and everything a resumed
``train`` needs, in three typed sections:

- ``model``: the family's config (:class:`~nmtkit.models.config.ModelConfig`, its ``arch``
  first) and the weights;
- ``text``: both sides' languages, vocabularies (token lists), text
  settings and BPE codes, and the corpus fingerprints (:class:`TextSides`);
- ``training``: the :class:`~nmtkit.train.config.TrainConfig`, the
  :class:`Progress`, and, in a resumable file, the optimizer state, the batch
  iterator's position and every process's RNG states (:class:`TrainingState`);
- ``lexicon`` (optional): the candidate lists of vocabulary selection
  (:class:`~nmtkit.data.lexicon.Lexicon`);
- ``averaged`` (optional): the file names and updates of the checkpoints that ``nmtkit
  average`` took the mean of (:class:`Averaged`).

On disk it is a torch zip of plain values and tensors only, so
``torch.load(weights_only=True)`` reads it and a stranger's file cannot run
code. :func:`save` writes a :class:`Checkpoint` (temporary file, fsync,
rename, fsync of the directory: a crash never harms the previous file);
:func:`load` reads the current version and the two before it, checks every
section, and refuses anything else with one :class:`FormatError` line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .. import __version__
from ..core.errors import FormatError, UserError
from ..core.files import atomic_write
from ..core.streams import STDIO
from ..data.binarized import Corpus
from ..data.lexicon import Lexicon
from ..data.sides import Sides
from ..models.base import Seq2Seq
from ..models.build import build_model, outside_classes
from ..models.config import ModelConfig, UnknownFamily, from_flat_record
from ..models.coverage import RENAMED_1_1
from ..text.settings import TextConfig
from ..train.config import TrainConfig
from . import archive, fields

FORMAT = "nmtkit-checkpoint"
# 3: the model's config by family, its sub-configs nested (1 and 2, nmtkit 0.1 to 1.1: one flat record)
VERSION = 3
SIDES = ("src", "tgt")


@dataclass
class Progress:
    """Where training stands: updates done, the best dev score so far (higher is better),
    validations since it improved, seconds spent training, the updates the learning rate
    decays over (``--lr-decay``; 0: not known yet), how long a validation takes (the last
    one's seconds, or an estimate; --max-minutes keeps them for the final one), and how many
    times ``--lr-decay plateau`` has lowered the rate. ``validation_owed``: a signal stopped the
    run at an update that was to validate, and the resumed run validates it first."""

    step: int = 0
    best: float = -math.inf
    bad_evals: int = 0
    seconds: float = 0.0
    budget: int = 0
    validation_seconds: float = 0.0
    decays: int = 0
    validation_owed: bool = False


@dataclass(frozen=True)
class TextSides:
    """How raw text becomes model tokens on each side, and which tokens the model knows.
    Every field but the fingerprints is keyed by side, ``src`` and ``tgt``."""

    langs: dict[str, str]
    vocab: dict[str, list[str]]
    text: dict[str, TextConfig]
    bpe_codes: dict[str, str | None]
    vocab_sha256: dict[str, str]  # by language, as in the corpus manifest
    settings_sha256: str | None = None

    @classmethod
    def of(cls, corpus: Corpus) -> TextSides:
        """What a checkpoint carries from the corpus it was trained on, so that translate needs
        nothing else."""
        m = corpus.manifest
        langs = {"src": m.src_lang, "tgt": m.tgt_lang}
        codes = {
            side: (corpus.path / name).read_text(encoding="utf-8") if (name := m.bpe_codes.get(lang)) else None
            for side, lang in langs.items()
        }
        return cls(
            langs=langs,
            vocab={side: corpus.vocab(lang).tokens for side, lang in langs.items()},
            text={side: m.text(lang) for side, lang in langs.items()},
            bpe_codes=codes,
            vocab_sha256={lang: m.vocab[lang].sha256 for lang in langs.values()},
            settings_sha256=m.settings_sha256,
        )

    def sides(self) -> Sides:
        """The text pipelines and vocabularies these settings make."""
        return Sides.of(self.text, self.bpe_codes, self.vocab)


@dataclass
class TrainingState:
    """The training run: its settings and progress; the rest only in resumable files."""

    config: TrainConfig
    progress: Progress
    optimizer: dict[str, Any] | None = None
    batches: dict[str, int] | None = None
    # the training split's fingerprint (Corpus.fingerprint): a resumed run goes on over the same pairs
    corpus_sha256: str | None = None
    # the valid split's: a resumed run over another compares its dev scores with none of the log's
    valid_sha256: str | None = None
    # the losses of the updates since the last report (a save between reports), plain values
    window: dict[str, Any] | None = None
    rng: list[dict[str, torch.Tensor]] = field(default_factory=list)  # one entry per process
    # --ema-decay's: the training weights, where the checkpoint's own are their average
    raw_weights: dict[str, torch.Tensor] | None = None
    # drawn when the run starts (update 0) and kept on resume: which run of a save directory wrote
    # the file, where an earlier run's files of the same names stay beside it (--reset)
    run_id: str | None = None

    @property
    def resumable(self) -> bool:
        return self.optimizer is not None and self.batches is not None


@dataclass(frozen=True)
class Averaged:
    """One of the checkpoints whose mean an ``nmtkit average`` file's weights are: its file name
    and the update it was saved at."""

    name: str
    step: int


@dataclass
class Checkpoint:
    """One checkpoint file, as :func:`load` reads it and :func:`save` writes it.

    Everything ``translate`` needs (the model, both text pipelines, the lexicon of
    ``--shortlist``) and, in a resumable ``last.pt``, everything a resumed ``train`` needs.

    Attributes:
        model: The architecture and sizes (:class:`~nmtkit.models.config.ModelConfig`).
        weights: The model's parameters by name; a lazy :func:`load` maps them from the file.
        text: Both sides' languages, vocabularies, text settings and BPE codes (:class:`TextSides`).
        training: The training settings and progress, plus the optimizer state, batch position
            and RNG states in a resumable file (:class:`TrainingState`).
        written_by: The nmtkit version that wrote the file.
        lexicon: The candidate lists of ``translate --shortlist``, or None.
        format_version: The layout the file was read from (a file is always written in :data:`VERSION`).
        averaged: The checkpoints whose mean the weights are, in the order averaged (``nmtkit
            average``); empty for a file a run saved.
        classes: The model's classes from outside nmtkit (a ``Luong`` subclass, its attention),
            which a reader must build too; empty for nmtkit's own models.

    Example:
        ```python
        from nmtkit import checkpoint
        ckpt = checkpoint.load("runs/demo/best.pt")
        print(ckpt.model.arch, ckpt.parameters, ckpt.text.langs, ckpt.training.progress.step)
        ```
    """

    model: ModelConfig
    weights: dict[str, torch.Tensor]
    text: TextSides
    training: TrainingState
    written_by: str = __version__
    lexicon: Lexicon | None = None  # the candidate lists of translate --shortlist
    format_version: int = VERSION
    averaged: tuple[Averaged, ...] = ()
    classes: tuple[str, ...] = ()  # the model's classes from outside nmtkit (models.build.outside_classes)

    @property
    def parameters(self) -> int:
        """How many numbers the weights hold, a tensor that two names share (tied embeddings:
        the output layer is the target embedding matrix) counted once, as train counts them."""
        seen = {
            (w.untyped_storage().data_ptr(), w.storage_offset(), tuple(w.shape)): w.numel()
            for w in self.weights.values()
        }
        return sum(seen.values())


def check_destination(path: str | Path) -> None:
    """Refuse '-' as a checkpoint's path before any work: a checkpoint is a binary file, never
    a stream on stdout."""
    if str(path) == STDIO:
        raise UserError("a checkpoint is a binary file, not a stream: give -o FILE, not '-'")


# the names train writes in its save directory: its resume state, its best models, its kept validations
_TRAINS = re.compile(r"(last|best|best-\d+|update-\d+)\.pt")


def check_not_train_s(out: str | Path, what: str, name: str) -> None:
    """Refuse a name that train writes in its run directory as the output of another command
    (``what``: the average, the model with a lexicon; ``name``: one to give it instead): it
    replaced the run's resume state (of which a model alone holds none) or one of its kept models."""
    out_dir = Path(out).parent
    if _TRAINS.fullmatch(Path(out).name) and any((out_dir / n).exists() for n in ("last.pt", "metrics.jsonl")):
        raise UserError(
            f"{out}: a name train writes in its run directory {out_dir} (its resume state, its best "
            f"models, its kept validations): name {what} otherwise (-o {out_dir / name})"
        )


def save(path: str | Path, ckpt: Checkpoint) -> None:
    """Write ``ckpt`` to ``path`` atomically, with the permissions of any other output."""
    check_destination(path)
    run = ckpt.training
    progress = {k: v for k, v in vars(run.progress).items() if k != "validation_owed" or v}  # older nmtkits read it
    training: dict[str, Any] = {"config": run.config.to_dict(), "progress": progress}
    if run.run_id is not None:
        training["run_id"] = run.run_id
    if run.resumable:
        training |= {"optimizer": run.optimizer, "batches": run.batches, "rng": run.rng}
        if run.corpus_sha256 is not None:
            training["corpus_sha256"] = run.corpus_sha256
        if run.valid_sha256 is not None:
            training["valid_sha256"] = run.valid_sha256
        if run.window is not None:
            training["window"] = run.window
        if run.raw_weights is not None:
            training["raw_weights"] = run.raw_weights
    text = ckpt.text
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "nmtkit": __version__,
        "model": {"config": ckpt.model.to_dict(), "weights": ckpt.weights}
        | ({"classes": list(ckpt.classes)} if ckpt.classes else {}),
        "text": {
            "langs": text.langs,
            "vocab": text.vocab,
            "text": {side: cfg.to_dict() for side, cfg in text.text.items()},
            "bpe_codes": text.bpe_codes,
            "vocab_sha256": text.vocab_sha256,
            "settings_sha256": text.settings_sha256,
        },
        "training": training,
    }
    if ckpt.lexicon is not None:
        payload["lexicon"] = ckpt.lexicon.to_dict()
    if ckpt.averaged:
        payload["averaged"] = [{"name": a.name, "step": a.step} for a in ckpt.averaged]
    with atomic_write(path, "wb") as fh:
        try:
            torch.save(payload, fh)
        except RuntimeError as err:  # torch's zip writer says a failed write (a full disk) its own way
            if isinstance(err.__context__, OSError):
                raise err.__context__ from None
            raise


def load(path: str | Path, lazy: bool = True) -> Checkpoint:
    """The checkpoint at ``path``; :class:`UserError` (one line) for a missing file and
    :class:`FormatError` for anything that is not a complete nmtkit checkpoint.

    ``lazy``: the tensors are mapped from the file, not read, so what a reader never touches
    (a translation, the optimizer state of last.pt) costs no memory. A resumed run reads all."""
    path = Path(path)
    raw = archive.read(path, lazy)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise FormatError(f"{path}: not an nmtkit checkpoint")
    version = raw.get("version")
    if version == 1:
        raw = _from_version_1(raw)
    elif version not in (2, VERSION):
        raise FormatError(
            f"{path}: checkpoint format version {version!r} is not supported "
            f"(this nmtkit reads versions 1 to {VERSION}){_newer(raw)}"
        )
    try:
        return _parse(raw, version)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        what = f"no {err.args[0]!r}" if isinstance(err, KeyError) else str(err).splitlines()[0][:120]
        raise FormatError(f"{path}: not a complete nmtkit checkpoint ({what}){_newer(raw)}") from None
    except UnknownFamily as err:
        raise UnknownFamily(f"{path}: {err}{_newer(raw)}") from None
    except FormatError as err:
        raise FormatError(f"{path}: not a complete nmtkit checkpoint ({err}){_newer(raw)}") from None


def _newer(raw: dict[str, Any]) -> str:
    """What to say of a file a newer nmtkit wrote (its format or settings may be unknown here)."""
    wrote = raw.get("nmtkit")
    newer = isinstance(wrote, str) and _release(wrote) > _release(__version__)
    return f": nmtkit {wrote} wrote it, and this is {__version__}" if newer else ""


def _release(version: str) -> tuple[int, ...]:
    return (*(int(n) for n in re.findall(r"\d+", version)[:3]), 0, 0, 0)[:3]  # 1.3 as 1.3.0


def not_finite(ckpt: Checkpoint) -> str | None:
    """The name of the first weight that holds NaN or infinite values (a damaged file, or a run
    that diverged), if any."""
    return next((k for k, w in ckpt.weights.items() if w.is_floating_point() and not bool(w.isfinite().all())), None)


def load_weights(
    model: torch.nn.Module, ckpt: Checkpoint, where: str | Path, assign: bool = False, new: str | None = None
) -> None:
    """Put the checkpoint's weights into ``model``; one FormatError line naming ``where`` if
    they do not fit it. ``assign``: the model's parameters become the checkpoint's tensors
    (mapped from the file by a lazy load) instead of copies of them: one copy in memory.
    ``new``: the prefix of parameters the checkpoint does not hold, which keep their values."""
    refuse_other_classes(ckpt, model, where)
    if (broken := not_finite(ckpt)) is not None:  # the search would never see a hypothesis end
        raise FormatError(f"{where}: the weight {broken} holds NaN or infinite values (a damaged file)")
    try:
        found = model.load_state_dict(ckpt.weights, assign=assign, strict=new is None)
        if new is not None and (other := [k for k in found.missing_keys if not k.startswith(new)]):
            raise RuntimeError(f"missing {', '.join(other[:3])}")
        if found.unexpected_keys:
            raise RuntimeError(f"unexpected {', '.join(found.unexpected_keys[:3])}")
        if isinstance(model, Seq2Seq):
            model.tie_weights()  # assigned, tied parameters came back as two tensors
    except RuntimeError as err:
        # torch's first line names only the model ("Error(s) in loading state_dict for RNNSearch:")
        said = [line.strip() for line in str(err).splitlines() if line.strip()]
        detail = said[1] if len(said) > 1 and said[0].startswith("Error(s) in loading") else said[0]
        raise FormatError(
            f"{where}: the weights do not fit the model the checkpoint describes ({detail[:200]})"
        ) from None


def model_of(ckpt: Checkpoint, where: str | Path, device: torch.device | str = "cpu") -> Seq2Seq:
    """The checkpoint's model with its weights, on ``device``, in eval mode and frozen (for
    inference: its parameters are the checkpoint's own tensors, not copies, and need no
    gradient, which lets search keep reordered copies of them)."""
    try:
        model = build_model(ckpt.model)
    except (RuntimeError, TypeError, ValueError) as err:  # sizes no model has: an edited file (a -5 emb)
        raise FormatError(f"{where}: its model settings build no model ({str(err).splitlines()[0][:120]})") from None
    load_weights(model, ckpt, where, assign=True)
    return model.to(device).eval().requires_grad_(False)


def refuse_other_classes(ckpt: Checkpoint, model: torch.nn.Module, where: str | Path) -> None:
    """Refuse, in a line, to read ``ckpt`` into a model of other classes than those it was trained
    with: a checkpoint names its family, and a Luong subclass's attention that only scores another
    way has the paper's weights, which the paper's model read without a word."""
    built = outside_classes(model)
    if built != ckpt.classes:
        own = f"nmtkit's own {ckpt.model.arch}"
        raise UserError(
            f"{where}: its model was trained with {', '.join(ckpt.classes) or own}, and this process builds "
            f"{', '.join(built) or own}: build the same (a family of its own, registered before loading: "
            "docs/development.md)"
        )


def _from_version_1(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (nmtkit 0.1 before the typed sections): model config and weights at the top,
    ``corpus`` for the text, ``train`` for the run, the RNG states under ``{"ranks": [...]}``
    (or, older still, one CPU state)."""
    train = dict(raw.get("train") or {})
    rng = train.get("rng")
    if isinstance(rng, dict):
        train["rng"] = rng["ranks"] if "ranks" in rng else [rng]
    return {
        "format": FORMAT,
        "version": 1,
        "nmtkit": raw.get("nmtkit", "0.1.0"),
        "model": {"config": raw.get("model"), "weights": raw.get("weights")},
        "text": raw.get("corpus"),
        "training": train,
    }


def _parse(raw: dict[str, Any], version: int) -> Checkpoint:
    """The checkpoint in ``raw``, read from format ``version``: before 3, its model config is
    1.0's or 1.1's one record of every family's fields."""
    model, text, run = raw["model"], raw["text"], raw["training"]
    weights, raw_weights = model["weights"], run.get("raw_weights")
    if not fields.named_tensors(weights):
        raise FormatError("the weights are not a table of named tensors")
    if raw_weights is not None and not fields.named_tensors(raw_weights):
        raise FormatError("the training weights are not a table of named tensors")
    config = (from_flat_record if version < VERSION else ModelConfig.from_dict)(model["config"])
    sides = TextSides(
        langs={s: str(text["langs"][s]) for s in SIDES},
        vocab={s: fields.tokens(text["vocab"][s]) for s in SIDES},
        text={s: TextConfig.from_dict(text["text"][s]) for s in SIDES},
        bpe_codes={s: fields.optional_str(text["bpe_codes"][s]) for s in SIDES},
        vocab_sha256={str(k): str(v) for k, v in text["vocab_sha256"].items()},
        settings_sha256=fields.optional_str(text.get("settings_sha256")),
    )
    for side, size in (("src", config.src_vocab), ("tgt", config.tgt_vocab)):
        if len(sides.vocab[side]) != size:
            raise FormatError(f"the {side} vocabulary has {len(sides.vocab[side]):,} entries but the model {size:,}")
    optimizer, batches, rng = run.get("optimizer"), run.get("batches"), fields.rng_states(run.get("rng"))
    if (optimizer is None) != (batches is None) or (optimizer is not None and not rng):
        raise FormatError("the training state is half there (optimizer, batch position or RNG states missing)")
    state = TrainingState(
        config=TrainConfig.from_dict(run["config"]),
        progress=Progress(**fields.like(run["progress"], Progress(), "progress")),
        optimizer=optimizer,
        batches=batches and {k: int(v) for k, v in batches.items()},
        corpus_sha256=fields.optional_str(run.get("corpus_sha256")),
        valid_sha256=fields.optional_str(run.get("valid_sha256")),
        window=fields.window(run.get("window")),
        rng=rng,
        raw_weights=raw_weights and _today_s_names(raw_weights),
        run_id=fields.optional_str(run.get("run_id")),
    )
    return Checkpoint(
        model=config,
        weights=_today_s_names(weights),
        text=sides,
        training=state,
        written_by=str(raw.get("nmtkit", "?")),
        lexicon=fields.lexicon(raw.get("lexicon"), config),
        format_version=version,
        averaged=tuple(Averaged(a["name"], a["step"]) for a in fields.averaged(raw.get("averaged", []))),
        classes=fields.names(model.get("classes", []), "model classes"),
    )


def _today_s_names(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The weights under today's names: 1.1 kept the coverages' on RNNsearch itself (``U_f.*``,
    ``coverage_rnn.*``), which :mod:`nmtkit.models.coverage` holds now. Renamed here, where a file
    is read, so that every reader (translate, a resumed run, average) sees one set of names."""
    renamed = {}
    for key, tensor in weights.items():
        old = next((o for o in RENAMED_1_1 if key.startswith(o)), None)
        renamed[key if old is None else RENAMED_1_1[old] + key[len(old) :]] = tensor
    return renamed
