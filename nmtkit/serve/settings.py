"""What a server listens on and what it accepts: plain values, so that ``nmtkit serve``'s
options read their defaults here (and its search settings from :class:`SearchConfig`, as
translate does)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import UserError
from ..translate.settings import MAX_LENGTH, SearchConfig


@dataclass(frozen=True)
class Limits:
    max_sentences: int = 64  # per request (and per batch of requests)
    max_length: int = MAX_LENGTH  # source subword units per sentence, as translate counts them
    max_body: int = 1 << 20  # bytes
    max_beam: int = 24
    max_nbest: int = 10


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    search: SearchConfig = SearchConfig()  # what a request gets for each setting it names none of
    batch_wait_ms: float = 5.0  # how long a batch waits for other requests to join it
    int8: bool = False  # int8 linear layers on CPUs, as translate --int8
    shortlist: bool = False  # vocabulary selection, as translate --shortlist
    limits: Limits = field(default_factory=Limits)

    def check(self) -> ServerConfig:
        """This config, or :class:`UserError` for a default beam the limits would refuse."""
        if self.search.beam > self.limits.max_beam:
            raise UserError(f"--beam {self.search.beam} is more than --max-beam {self.limits.max_beam}")
        return self
