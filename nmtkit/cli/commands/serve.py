"""``nmtkit serve``: translation over HTTP, and a page that shows the attention."""

from __future__ import annotations

from typing import Any

import click

from ...core.command import Command
from ...core.errors import UserError
from ...core.held_signals import ctrl_c_heard, signals_held
from ...serve.settings import Limits, ServerConfig
from ...translate.settings import SEARCH_OPTIONS, SearchConfig, TranslateOptions
from .. import options
from ..config_file import config_options


@click.command(
    cls=Command,
    epilog="""\b
Examples:
  nmtkit serve -m runs/demo/best.pt            # http://127.0.0.1:8080/: the page; /docs: the API
  curl -s localhost:8080/translate -H 'Content-Type: application/json' \\
       -d '{"sentences": ["And God said, Let there be light."], "beam": 5}'
  nmtkit serve -m a.pt -m b.pt --host 0.0.0.0 --port 5000 --int8 --shortlist
  nmtkit serve -m en-fr.pt -m fr-en.pt         # the answers' "alignment": both directions' links""",
)
@options.models(
    "Checkpoint to serve; repeat for an ensemble. Checkpoints of the other direction serve the answers' "
    '"alignment" (both directions\' links, combined by --combine).'
)
@config_options()
@options.option(ServerConfig, "host")
@options.option(ServerConfig, "port")
# the search settings a request may choose beside nbest, from their one declaration; the server's
# value is what a request that names none of them gets
@options.options_of(SearchConfig, *SEARCH_OPTIONS, note="The server's, for a request that names none.")
@options.option(Limits, "max_sentences")
@options.option(Limits, "max_length")
@options.option(Limits, "max_body")
@options.option(Limits, "max_beam")
@options.option(Limits, "max_phrases")
@options.option(ServerConfig, "batch_wait_ms", dest="batch_wait")
@options.option(ServerConfig, "shutdown_wait")
@options.option(TranslateOptions, "shortlist")
@click.option(
    "--glossary",
    type=options.FilePath(),
    help="Terms and their translations, 'source term<TAB>target term' lines: each translation whose sentence "
    "holds a source term (as whole words) holds its translation, as translate --glossary.",
)
@options.links
@options.inference_runtime
@options.verbosity
def serve(
    model_paths: tuple[str, ...],
    host: str,
    port: int,
    max_sentences: int,
    max_length: int,
    max_body: int,
    max_beam: int,
    max_phrases: int,
    batch_wait: float,
    shutdown_wait: float,
    shortlist: bool,
    glossary: str | None,
    **values: Any,
) -> None:
    """Serve translation over HTTP: a JSON API (also OpenNMT-py's request shape; described at
    /openapi.json, and at /docs, whose Swagger UI the browser loads from the web) and a page that
    shows the attention (self-contained). A request may choose the beam, nbest and the
    search options below; one it names none of is the option's value here (translate's default),
    and a request may lower --max-output-ratio, not raise it. Needs FastAPI and uvicorn (the serve
    extra)."""
    with ctrl_c_heard():  # a background job's ignored Ctrl-C: heard from the first import on
        try:
            with signals_held():  # a Ctrl-C inside FastAPI's import: a traceback of pydantic's, or lost
                from ...serve.app import serve as run
        except ImportError as err:  # FastAPI and uvicorn are an extra
            from ...core.extras import install_command

            raise UserError(
                f"nmtkit serve needs FastAPI and uvicorn ({err.name} is missing): {install_command('serve')}"
            ) from None
        search = options.config_of(SearchConfig, values)
        limits = Limits(max_sentences, max_length, max_body, max_beam, max_phrases=max_phrases)
        from ...translate.glossary import read_glossary

        terms = read_glossary(glossary) if glossary else None
        cfg = ServerConfig(host, port, search, batch_wait, shortlist, limits, shutdown_wait, terms).check()
        links = options.link_config(values, model_paths)
        run(list(model_paths), cfg, options.runtime_config(values), links)
