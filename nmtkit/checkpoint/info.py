"""``nmtkit info``: what a checkpoint holds, without loading a model.

The architecture and sizes, both sides' languages, vocabularies and text
settings, how far training got and its best dev score, and the resolved
training settings: enough to tell two checkpoints apart, or to rebuild the
command that made one.
"""

from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path
from typing import Any

from .. import checkpoint
from ..core.settings import declared_names, sub_config
from ..models.config import FAMILIES


def describe(path: str | Path) -> dict[str, Any]:
    """A JSON-ready summary of the checkpoint at ``path``."""
    ckpt = checkpoint.load(path)
    run, model = ckpt.training, ckpt.model
    best = run.progress.best
    by = run.config.chosen_by
    return {
        "path": str(path),
        "written_by": ckpt.written_by,
        "format_version": ckpt.format_version,
        "model": model.to_dict(),
        "parameters": ckpt.parameters,
        "languages": ckpt.text.langs,
        "vocabulary": {side: len(tokens) for side, tokens in ckpt.text.vocab.items()},
        "bpe": {side: codes is not None for side, codes in ckpt.text.bpe_codes.items()},
        "text": {side: cfg.to_dict() for side, cfg in ckpt.text.text.items()},
        "progress": {
            "updates": run.progress.step,
            "minutes": run.progress.seconds / 60,
            "best_by": by,
            "best": None if not math.isfinite(best) else (best if by == "bleu" else -best),
        },
        "resumable": run.resumable,
        "lexicon": None
        if ckpt.lexicon is None
        else {"frequent": ckpt.lexicon.frequent, "per_source": int(ckpt.lexicon.table.shape[1])},
        "training": run.config.to_dict(),
        "averaged": [{"name": a.name, "updates": a.step} for a in ckpt.averaged],
        "classes": list(ckpt.classes),
    }


def format_info(info: dict[str, Any]) -> str:
    m, p = info["model"], info["progress"]
    sizes = ", ".join(f"{k} {m[k]}" for k in ("emb", "hidden", "align", "maxout") if k in m)
    if m.get("output_rank"):
        sizes += f", output rank {m['output_rank']}"
    if m["arch"] == "luong":
        sizes = f"{m['layers']} layers, emb {m['emb']}, hidden {m['hidden']}; {_luong_attention(m)}"
    if m.get("dropout"):
        sizes += f"; dropout {m['dropout']:g}"
    if m.get("weight_drop"):
        sizes += f"; weight drop {m['weight_drop']:g}"
    coverage = m.get("coverage") or {}
    extras = [
        *([f"{coverage['kind']} coverage"] if coverage.get("kind", "none") != "none" else []),
        *(["alignment head"] if m.get("alignment_head") else []),
        *(["tied embeddings"] if m.get("tie_embeddings") else []),
        *(["layer norm"] if m.get("layer_norm") else []),
        *([f"{m['encoder']} encoder"] if m.get("encoder", "paper") != "paper" else []),
        *(["right to left"] if m.get("right_to_left") else []),
        *_others(m),
    ]
    sizes += "".join(f"; {extra}" for extra in extras)
    langs, vocab = info["languages"], info["vocabulary"]
    best = (
        "none yet"
        if p["best"] is None
        else f"dev BLEU {p['best']:.2f}"
        if p["best_by"] == "bleu"
        else f"dev NLL {p['best']:.2f} per sentence"
    )
    t = info["training"]
    lines = [
        f"{info['path']}: nmtkit checkpoint (format {info['format_version']}, written by nmtkit {info['written_by']})",
        f"model      {m['arch']}: {sizes}; {info['parameters']:,} parameters",
        *(
            [f"classes    {', '.join(info['classes'])} (from outside nmtkit: a reader builds them too)"]
            if info.get("classes")
            else []
        ),
        f"languages  {langs['src']} → {langs['tgt']}; vocabularies {vocab['src']:,} and {vocab['tgt']:,}"
        + (" (BPE)" if any(info["bpe"].values()) else " (words)"),
        f"text       cleaning {', '.join(info['text']['src']['clean']) or 'none'}"
        + ("; lowercased" if info["text"]["src"]["lowercase"] else ""),
        f"progress   {p['updates']:,} update{'' if p['updates'] == 1 else 's'} in {p['minutes']:.1f} minutes; "
        f"best {best}" + ("" if info["resumable"] else "; weights only (cannot resume)"),
        *_averaged(info.get("averaged") or []),
        "shortlist  "
        + (
            f"{info['lexicon']['frequent']:,} frequent target words + {info['lexicon']['per_source']} "
            f"per source word (translate --shortlist)"
            if info.get("lexicon")
            else "none (nmtkit lexicon adds one)"
        ),
        f"training   {t['optimizer']} lr {t['lr']:g}{_schedule(t)}, batch "
        + (f"{t['max_tokens']:,} target tokens" if t["max_tokens"] else f"{t['batch_size']}")
        + (f" × {t['update_freq']} accumulated" if t.get("update_freq", 1) > 1 else "")
        + (f", label smoothing {t['label_smoothing']:g}" if t.get("label_smoothing") else "")
        + (f", sampled softmax over {t['shortlist']:,} words" if t.get("shortlist") else "")
        + f", clip {t['clip']:g}, max length {t['max_len']}, seed {t['seed']}"
        + (", bf16" if t["bf16"] else "")
        + (f"; weights averaged (EMA {t['ema_decay']:g})" if t.get("ema_decay") else ""),
    ]
    return "\n".join(lines)


# the model's settings format_info says in words of its own (a sub-config's kind too)
_SAID = {
    *("arch", "src_vocab", "tgt_vocab", "emb", "hidden", "align", "maxout", "output_rank", "layers", "dropout"),
    *("weight_drop", "alignment_head", "tie_embeddings", "layer_norm", "encoder", "kind", "right_to_left"),
    *("attention", "score", "window", "window_renorm", "input_feed", "reverse_source"),
}


def _others(m: dict[str, Any]) -> list[str]:
    """The model's other settings where they differ from their family's defaults, by name and value
    (``readout next``): a setting added to a family is said with no change here. Fields that are no
    setting (the vocabularies' sizes, Luong's ``max_src``, which train derives) are left out."""
    family = FAMILIES.get(m["arch"])
    if family is None:
        return []
    settings = {n for cls in (family, *filter(None, map(sub_config, fields(family)))) for n in declared_names(cls)}
    default, flat = family().to_dict(), []
    for key, value in m.items():
        if isinstance(value, dict):  # a sub-config (RNNsearch's coverage): its fields are flags of their own
            flat += [(k, v, default.get(key, {}).get(k)) for k, v in value.items()]
        else:
            flat.append((key, value, default.get(key)))
    return [
        f"{key.replace('_', ' ')} {value:g}" if isinstance(value, float) else f"{key.replace('_', ' ')} {value}"
        for key, value, usual in flat
        if key in settings and key not in _SAID and value != usual
    ]


def _luong_attention(m: dict[str, Any]) -> str:
    """A Luong model's attention as train's errors name its settings: the score, the window's D,
    the renormalisation, the input feeding and the source's order."""
    how = [] if m["attention"] == "none" else [m["score"]]
    if m["attention"] in ("local-m", "local-p"):
        how.append(f"D = {m['window']}")
    if m.get("window_renorm"):
        how.append("renormalised")
    return (
        f"attention {m['attention']}"
        + (f" ({', '.join(how)})" if how else "")
        + f", input feeding {'on' if m['input_feed'] else 'off'}"
        + f", source {'reversed' if m.get('reverse_source', True) else 'in order'}"
    )


def _schedule(t: dict[str, Any]) -> str:
    """What moves the rate, as the flags say it: ' (warm-up 50, cosine)', or nothing."""
    parts = [f"warm-up {t['warmup']}"] if t.get("warmup") else []
    decay = t.get("lr_decay", "none")
    if decay == "plateau":
        parts.append(f"× {t['decay']:g} on plateaus of {t['decay_patience'] + 1} validations")
    elif decay != "none":
        parts.append(decay)
    if t.get("decay_after"):
        parts.append(f"× {t['decay']:g} each epoch after {t['decay_after']}")
    return f" ({', '.join(parts)})" if parts else ""


def _averaged(inputs: list[dict[str, Any]]) -> list[str]:
    """The line of a file ``nmtkit average`` wrote: the checkpoints it is the mean of (all of them
    in the JSON), the progress line above being the last one's."""
    if not inputs:
        return []
    first, last = (f"{a['name']} (update {a['updates']:,})" for a in (inputs[0], inputs[-1]))
    joined = "and" if len(inputs) == 2 else "to"
    return [f"averaged   {len(inputs)} checkpoints, {first} {joined} {last}; the progress above is the last one's"]
