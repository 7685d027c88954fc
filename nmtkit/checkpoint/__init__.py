"""The checkpoint: one file from raw text to raw text (:mod:`.file` owns its layout, :mod:`.archive` its bytes), and the
commands that read or rewrite checkpoint files (info, average, lexicon)."""

from .archive import DamagedCheckpoint
from .file import (
    FORMAT,
    SIDES,
    VERSION,
    Averaged,
    Checkpoint,
    Progress,
    TextSides,
    TrainingState,
    check_destination,
    load,
    load_weights,
    model_of,
    save,
)

__all__ = [
    "FORMAT",
    "SIDES",
    "VERSION",
    "Averaged",
    "Checkpoint",
    "DamagedCheckpoint",
    "Progress",
    "TextSides",
    "TrainingState",
    "check_destination",
    "load",
    "load_weights",
    "model_of",
    "save",
]
