"""What a server listens on and what it accepts: plain values, so that ``nmtkit serve``'s
options read their defaults here (and its search settings from :class:`SearchConfig`, as
translate does)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import UserError
from ..core.settings import Settings, setting
from ..translate.settings import MAX_LENGTH, SearchConfig


@dataclass(frozen=True)
class Limits(Settings):
    max_sentences: int = setting(64, "Sentences per request (and per batch of requests).", ge=1)
    max_length: int = setting(
        MAX_LENGTH,
        "Source subword units per sentence, as translate counts them: a longer one is refused (413).",
        ge=1,
        flag="--max-source-len",
        old="--max-length",
    )
    max_body: int = setting(1 << 20, "Bytes per request.", ge=1)
    max_beam: int = setting(24, "Largest beam a request may ask.", ge=1)
    max_phrases: int = setting(
        32,
        "Phrases a sentence may have to hold (its constraints and the glossary terms found in it): a "
        "search's time grows faster than their number.",
        ge=1,
    )
    max_nbest: int = 10


@dataclass(frozen=True)
class ServerConfig(Settings):
    host: str = setting("127.0.0.1", "Address to listen on.")
    port: int = setting(8080, "Port to listen on.", ge=0, le=65535)
    search: SearchConfig = SearchConfig()  # what a request gets for each setting it names none of
    batch_wait_ms: float = setting(
        5.0, "Milliseconds a batch waits for other requests to join it.", ge=0, flag="--batch-wait"
    )
    shortlist: bool = False  # vocabulary selection, as translate --shortlist (declared there)
    limits: Limits = field(default_factory=Limits)
    shutdown_wait: float = setting(
        30.0,
        "Seconds SIGTERM (or Ctrl-C) waits for the requests in flight to finish before it cancels them "
        "(each then gets a 503).",
        ge=0,
    )
    glossary: tuple[tuple[str, str], ...] | None = None  # terms held where found, as translate --glossary's

    def check(self) -> ServerConfig:
        """This config, or :class:`UserError` for a default beam the limits would refuse, or a
        glossary beside ordered constraints."""
        if self.search.beam > self.limits.max_beam:
            raise UserError(f"--beam {self.search.beam} is more than --max-beam {self.limits.max_beam}")
        if self.glossary and self.search.ordered_constraints:
            raise UserError("--glossary's terms have no order in the output: constraints cannot be ordered beside it")
        return self
