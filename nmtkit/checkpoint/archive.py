"""A checkpoint's bytes: a torch zip archive, every record checked against its checksum, read
with ``weights_only=True``; what is wrong with a file that is not one said in a line."""

from __future__ import annotations

import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import torch

from ..core.errors import FormatError, UserError


class DamagedCheckpoint(FormatError):
    """A checkpoint file whose bytes are cut short or damaged, not one of another format or version."""


def read(path: Path, lazy: bool = True) -> Any:
    """What torch.save wrote to ``path``, its records' checksums checked first; one line for a
    missing file, a damaged one, or one that holds objects other than tensors and plain values.
    ``lazy``: the tensors are mapped from the file, not read."""
    if not path.exists():
        raise UserError(f"{path}: no such checkpoint")
    if not path.is_file():
        raise UserError(f"{path}: is not a file")
    try:  # is_zipfile says False of a file it may not read, which is no damage
        path.open("rb").close()
    except PermissionError:
        raise UserError(f"{path}: permission denied") from None
    if not zipfile.is_zipfile(path):  # torch.save always writes a zip archive
        raise DamagedCheckpoint(f"{path}: truncated or corrupt checkpoint (not a torch zip archive)")
    _check_sums(path)
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True, mmap=lazy)
    except pickle.UnpicklingError as err:
        # torch's first lines tell how to load the file unsafely; the line that names the object is after them
        said = [line.strip() for line in str(err).splitlines() if line.strip()] or ["unsupported object"]
        named = next(
            (line.split("error: ", 1)[1] for line in said if line.startswith("WeightsUnpickler error: ")),
            next((line for line in said if "global" in line.lower()), said[0]),  # a blocked module's line
        )
        if "global" not in named.lower():  # not an object refused: bytes no pickle writes (a damaged record)
            raise DamagedCheckpoint(f"{path}: truncated or corrupt checkpoint ({_short(named)})") from None
        named = named.split(" was not an allowed global")[0]
        raise FormatError(
            f"{path}: refused, the checkpoint holds objects other than tensors and plain values ({_short(named)})"
        ) from None
    except (
        RuntimeError,
        EOFError,
        zipfile.BadZipFile,
        OSError,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        struct.error,  # a record cut short within the archive, its checksum made anew
    ) as err:
        raise DamagedCheckpoint(f"{path}: truncated or corrupt checkpoint ({_torch_reason(err)})") from None
    return raw


def _torch_reason(err: BaseException) -> str:
    """torch's word for a file it cannot read, in a line: without its request for a report, and a
    zip archive of other records named as such."""
    said = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
    if "hasRecord(" in said:  # a zip archive, but none of the records torch.save writes
        return "a zip archive that torch.save did not write"
    return _short(said.split(" (Could this error message be improved?")[0].strip())


def _short(said: str, most: int = 120) -> str:
    """``said`` cut at a word's end within ``most`` characters."""
    return said if len(said) <= most else said[:most].rsplit(" ", 1)[0] + " …"


def _check_sums(path: Path) -> None:
    """Every record's bytes against the checksum torch.save wrote: a mapped load reads a weight's
    bytes as they are, so a damaged weight would translate. Once a process per file as it is now
    (a command may load a checkpoint several times); a record written without one (torch's
    ``set_crc32_options(False)`` writes 0) is taken as it is."""
    found = path.stat()
    key = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)
    if key in _CHECKED:
        return
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
            if not any(r.filename.endswith("/data.pkl") for r in records):
                raise FormatError(f"{path}: not an nmtkit checkpoint (a zip archive that torch.save did not write)")
            for record in records:
                if record.CRC == 0 and record.file_size:
                    continue
                with archive.open(record) as stream:  # read to its end, where zipfile checks the sum
                    while stream.read(1 << 24):
                        pass
    except zipfile.BadZipFile as err:
        if "CRC" in str(err):
            raise DamagedCheckpoint(
                f"{path}: corrupt checkpoint (the bytes of {record.filename} do not match their checksum)"
            ) from None
        raise DamagedCheckpoint(f"{path}: truncated or corrupt checkpoint ({str(err).splitlines()[0][:120]})") from None
    except (OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as err:
        raise DamagedCheckpoint(f"{path}: truncated or corrupt checkpoint ({_torch_reason(err)})") from None
    _CHECKED.add(key)


_CHECKED: set[tuple[int, int, int, int]] = set()
