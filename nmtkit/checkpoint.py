"""The one-file checkpoint: everything translate needs, and everything resume needs.

Contents (plain values and tensors only, so ``torch.load(weights_only=True)``
reads it and a stranger's file cannot run code): format and version, nmtkit
version, the model config and weights, both vocabularies as token lists,
the text settings and BPE codes per language, the corpus fingerprints, and
``train``: the training config, step, epoch, the batch iterator's position,
the optimizer state and the torch RNG state. Written to a temporary file,
fsynced, then renamed, so a crash while saving never harms the previous one.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

from . import __version__
from .errors import FormatError, UserError

FORMAT = "nmtkit-checkpoint"
VERSION = 1


def save(path: str | Path, payload: dict[str, Any]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save({"format": FORMAT, "version": VERSION, "nmtkit": __version__, **payload}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such checkpoint")
    if not zipfile.is_zipfile(path):   # torch.save always writes a zip archive
        raise FormatError(f"{path}: truncated or corrupt checkpoint (not a torch zip archive)")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "unsupported object"
        raise FormatError(f"{path}: refused, the checkpoint holds objects other than tensors and "
                          f"plain values ({first[:120]})") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as err:
        raise FormatError(f"{path}: truncated or corrupt checkpoint ({str(err).splitlines()[0][:120]})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise FormatError(f"{path}: not an nmtkit checkpoint")
    if ckpt.get("version") != VERSION:
        raise FormatError(f"{path}: checkpoint format version {ckpt.get('version')} is not supported")
    return ckpt
