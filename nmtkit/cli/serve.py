"""``nmtkit serve``: translation over HTTP, and a page that shows the attention."""

from __future__ import annotations

from typing import Any

import click

from ..core.command import Command
from ..core.errors import UserError
from ..serve.settings import Limits, ServerConfig
from ..translate.settings import SearchConfig
from . import options
from .config_file import config_options
from .translate import translate

_C = ServerConfig()
_L = Limits()

# The search settings a request may choose beside beam and nbest, each with translate's option as
# the server's default: the same names, defaults, bounds and help, declared once (in translate).
_SEARCH = ("length_penalty", "alpha", "coverage_penalty", "max_ratio", "min_len", "no_unk")


def _search_options_after_beam(command: click.Command) -> click.Command:
    """``command`` with translate's options of :data:`_SEARCH`, in translate's order, after its --beam."""
    at = next(k for k, p in enumerate(command.params) if p.name == "beam") + 1
    # with their old spellings (hidden, warning), as translate keeps them
    command.params[at:at] = [p for p in translate.params if (p.name or "").removeprefix("old_") in _SEARCH]
    return command


@_search_options_after_beam
@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit serve -m runs/demo/best.pt            # http://127.0.0.1:8080/: the page; /docs: the API
  curl -s localhost:8080/translate -H 'Content-Type: application/json' \\
       -d '{"sentences": ["And God said, Let there be light."], "beam": 5}'
  nmtkit serve -m a.pt -m b.pt --host 0.0.0.0 --port 5000 --int8 --shortlist""",
)
@click.option(
    "-m",
    "--model",
    "model_paths",
    required=True,
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Checkpoint to serve; repeat for an ensemble.",
)
@config_options
@options.setting("--host", _C, None, "Address to listen on.")
@options.setting("--port", _C, click.IntRange(0, 65535), "Port to listen on.")
@options.setting("--beam", _C.search, click.IntRange(1), "Beam when a request names none (translate's default).")
@options.setting("--max-sentences", _L, click.IntRange(1), "Sentences per request (and per batch of requests).")
@options.setting(
    "--max-source-len",
    _L,
    click.IntRange(1),
    "Source subword units per sentence, as translate counts them: a longer one is refused (413).",
    dest="max_length",
    old="--max-length",
)
@options.setting("--max-body", _L, click.IntRange(1), "Bytes per request.")
@options.setting("--max-beam", _L, click.IntRange(1), "Largest beam a request may ask.")
@options.setting(
    "--batch-wait",
    _C,
    click.FloatRange(0),
    "Milliseconds a batch waits for other requests to join it.",
    field="batch_wait_ms",
)
@click.option("--shortlist", is_flag=True, help="Vocabulary selection, as translate --shortlist.")
@click.option("--int8", is_flag=True, help="int8 linear layers on CPUs, as translate --int8.")
@options.runtime
@options.verbosity
def serve(
    model_paths: tuple[str, ...],
    host: str,
    port: int,
    max_sentences: int,
    max_length: int,
    max_body: int,
    max_beam: int,
    batch_wait: float,
    shortlist: bool,
    int8: bool,
    **values: Any,
) -> None:
    """Serve translation over HTTP: a JSON API (also OpenNMT-py's request shape, and described
    at /docs) and a page that shows the attention. A request may choose the beam, nbest and the
    search options below; one it names none of is the option's value here (translate's default),
    and a request may lower --max-output-ratio, not raise it. Needs FastAPI and uvicorn (make install
    has them)."""
    search = SearchConfig(**{name: values.pop(name) for name in ("beam", *_SEARCH)})
    limits = Limits(max_sentences, max_length, max_body, max_beam)
    cfg = ServerConfig(host, port, search, batch_wait, int8, shortlist, limits).check()
    try:
        from ..serve.app import serve as run  # an optional extra, and torch: not for --help
    except ImportError as err:
        raise UserError(
            f"nmtkit serve needs FastAPI and uvicorn ({err.name} is missing): "
            f"pip install -e '.[serve]' in nmtkit's checkout"
        ) from None
    run(list(model_paths), cfg, options.runtime_config(values))


COMMANDS = (serve,)
