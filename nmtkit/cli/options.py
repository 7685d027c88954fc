"""The option families several commands share, declared once: verbosity, workers, text
settings, runtime (device, threads, bf16, TF32) and search.

Defaults come from the typed configs the options fill, so a command line and the library
agree without a second copy of a number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..core.console import set_verbosity
from ..core.parallel import default_workers
from ..core.settings import DEVICES, RuntimeConfig
from ..text.clean import PRESETS, RULES, rules_named
from ..text.settings import TextConfig
from ..translate.settings import LENGTH_PENALTIES, SearchConfig

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

_TEXT = TextConfig("xx")
_RUNTIME = RuntimeConfig()
_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9}


def setting(
    flag: str, config: Any, kind: Any = None, help: str = "", old: str | None = None, **extra: Any
) -> Decorator:
    """An option whose default is the field of ``config`` named like it (``--max-len`` → max_len;
    the first name of ``--a/--no-a``; or ``field=``, or ``dest=``, which also names the parameter),
    shown in --help; with ``old``, also its former spelling (:func:`renamed`)."""
    dest = extra.pop("dest", None)  # the parameter's name, when not the flag's
    name = dest or flag.lstrip("-").split("/")[0].replace("-", "_")
    field = extra.pop("field", None) or name
    option = click.option(
        flag,
        *([dest] if dest else []),
        type=kind,
        default=getattr(config, field),
        show_default=True,
        help=help,
        **extra,
    )
    return option if old is None else options(option, renamed(old, flag, name, type=kind))


def options(*decorators: Decorator) -> Decorator:
    """Several click options as one decorator."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return apply


def _hand_to(dest: str, warning: str = "") -> Callable[[click.Context, click.Parameter, Any], None]:
    """A callback giving a parameter's value, when given, to the parameter ``dest`` (after
    ``warning`` on stderr, if any)."""

    def forward(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is None or value == () or value is False:
            return
        if warning:
            click.echo(f"{ctx.command_path}: warning: {warning}", err=True)
        # the new option, absent from the command line, is processed after this one and reads it here
        ctx.default_map = {**(ctx.default_map or {}), dest: value}

    return forward


def renamed(old: str, new: str, dest: str, **extra: Any) -> Decorator:
    """A hidden option under an old spelling (``-o/--out``) that still works but says, on stderr,
    to use the new one (``--dest-dir``), whose parameter ``dest`` takes its value."""
    # a name of its own, so that the new option's value in --config never reaches it
    return click.option(
        *old.split("/"),
        f"old_{dest}",
        hidden=True,
        expose_value=False,
        callback=_hand_to(dest, f"{old} is deprecated, use {new}"),
        **extra,
    )


def positional(dest: str, metavar: str, **extra: Any) -> Decorator:
    """An optional argument that is another spelling of the option whose parameter is ``dest``
    (``train DATA_BIN``, fairseq's, for ``--data``): one parameter, so --config and --dump-config
    know one key."""
    return click.argument(
        f"{dest}_arg", metavar=metavar, required=False, expose_value=False, callback=_hand_to(dest), **extra
    )


def data(help: str, **extra: Any) -> Decorator:
    """``--data DATA_BIN``: a binarized corpus (``preprocess --vocab``'s directory), on every command
    that reads one."""
    return click.option("--data", "data_bin", type=click.Path(file_okay=False), metavar="DATA_BIN", help=help, **extra)


# What info, score and score-align print; translate's --output-format has its own (jsonl: a line each).
json_output = options(
    click.option(
        "--output-format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="json: one JSON object instead of text.",
    ),
    renamed("--json", "--output-format json", "output_format", is_flag=True, flag_value="json"),
)


dest_dir = options(
    click.option(
        "-d",
        "--dest-dir",
        "out_dir",
        required=True,
        type=click.Path(file_okay=False),
        help="Directory to write into (created if missing).",
    ),
    renamed("-o/--out", "-d/--dest-dir", "out_dir", type=click.Path(file_okay=False)),
)


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        set_verbosity(quiet=param.name == "quiet", verbose=param.name == "verbose")


verbosity = options(
    click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        callback=_set_verbosity,
        help="Nothing on stderr but errors: no logs, summaries or progress.",
    ),
    click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=_set_verbosity,
        help="Also log the details: resolved settings, device and threads.",
    ),
)

workers = click.option(
    "-j",
    "--workers",
    type=click.IntRange(1),
    default=default_workers(),
    show_default="number of cores",
    help="Processes to spread the work over.",
)

text = options(
    click.option(
        "--clean",
        "clean",
        default="default",
        show_default=True,
        help=f"Cleaning: a preset ({', '.join(PRESETS)}; 'default' = unicode,whitespace suits any corpus, "
        f"'bible' = every rule, for the embedded Bible corpus) or rules, comma-separated: "
        f"{', '.join(RULES)}.",
    ),
    setting("--normalize-punct/--no-normalize-punct", _TEXT, None, "Moses punctuation normalization."),
    click.option("--aggressive-dash", is_flag=True, help="Split hyphens: arc @-@ en @-@ ciel."),
    click.option("--lowercase", is_flag=True, help="Lowercase tokens (the paper does not)."),
)


def text_config(lang: str, values: dict[str, Any]) -> TextConfig:
    """The text settings of one language from the values of :data:`text`'s options."""
    return TextConfig(
        lang,
        clean=rules_named(values["clean"]),
        normalize_punct=values["normalize_punct"],
        aggressive_dash=values["aggressive_dash"],
        lowercase=values["lowercase"],
    )


runtime = options(
    click.option(
        "--device",
        default=_RUNTIME.device,
        help=f"Where to compute: {DEVICES} [default: the GPU when there is one, else cpu].",
    ),
    setting("--threads", _RUNTIME, click.IntRange(0), "CPU threads (0: torch's default, one per core)."),
    click.option(
        "--bf16",
        is_flag=True,
        help="bfloat16 autocast: on GPUs, and on CPUs with AVX512-BF16 or AMX (about 2x faster there).",
    ),
    click.option(
        "--tf32/--no-tf32",
        default=_RUNTIME.tf32,
        show_default=True,
        help="On GPUs, float32 matrix products in TensorFloat-32 (tensor cores; 10-bit mantissa, "
        "float32 range and sums). No effect on CPUs.",
    ),
)


def runtime_config(values: dict[str, Any]) -> RuntimeConfig:
    """The runtime settings of :data:`runtime`'s options, taken out of ``values``."""
    return RuntimeConfig(values.pop("device"), values.pop("threads"), values.pop("bf16"), values.pop("tf32"))


def count(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """A click callback: '348M' → 348000000, '2.5k' → 2500 (None stays None)."""
    if value is None:
        return None
    text = value.strip().lower().replace(",", "").replace("_", "")
    scale = _SUFFIXES.get(text[-1:], 1)
    try:
        n = float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a count such as 348M, 2.5k or 1000000") from None
    if n <= 0:
        raise click.BadParameter(f"'{value}' must be positive")
    return int(n)


_SEARCH = SearchConfig()

beam = setting("--beam", _SEARCH, click.IntRange(1), "Beam width (1: greedy).")

search = options(
    beam,
    setting(
        "--length-penalty",
        _SEARCH,
        click.Choice(LENGTH_PENALTIES),
        "Rank finished hypotheses by raw log-probability (the paper), "
        "by log-probability per word, or by GNMT's ((5+|y|)/6)^alpha.",
    ),
    setting("--alpha", _SEARCH, click.FloatRange(0), "GNMT length penalty exponent."),
    setting(
        "--coverage-penalty",
        _SEARCH,
        click.FloatRange(0),
        "Wu et al. (2016)'s coverage penalty beta: add beta times the sum over source units (end of sentence "
        "included) of log min(attention received, 1) to each finished hypothesis' rank, a penalty "
        "(never positive) on translations that leave source words out (0: off; GNMT used 0.2 with "
        "--length-penalty gnmt).",
    ),
    setting(
        "--max-output-ratio",
        _SEARCH,
        click.FloatRange(0),
        "Output limit: this times the source length, plus 10 (fairseq's --max-len-a, Marian's --max-length-factor).",
        dest="max_ratio",
        old="--max-ratio",
    ),
    setting(
        "--min-output-len",
        _SEARCH,
        click.IntRange(0),
        "Words before </s> at least (1, as GroundHog and fairseq's --min-len: no empty translation).",
        dest="min_len",
        old="--min-len",
    ),
    click.option(
        "--nbest",
        type=click.IntRange(0),
        default=0,
        show_default=True,
        help="Write the N best (1: the best alone) as Moses n-best lines: "
        "'i ||| text ||| log p ||| normalised log p', i from 0 (0: the best, as plain text).",
    ),
    click.option("--no-unk", is_flag=True, help="Never produce <unk> (the paper's Table 1, last column)."),
)


sampling = options(
    click.option(
        "--sampling",
        is_flag=True,
        help="Draw each output word by word from the model's distribution instead of searching, "
        "for back-translation (fairseq's --sampling, Marian's --output-sampling); --nbest N draws "
        "N independent samples per line, written best first; --beam is unused.",
    ),
    setting(
        "--temperature",
        _SEARCH,
        click.FloatRange(0, min_open=True),
        "With --sampling: draw from softmax(log p / T), sharper below 1, flatter above.",
    ),
    setting(
        "--top-k",
        _SEARCH,
        click.IntRange(0),
        "With --sampling: draw among the K most probable words only (0: the whole vocabulary).",
    ),
    setting(
        "--seed",
        _SEARCH,
        click.IntRange(0, 2**63 - 1),
        "With --sampling: the seed; a line's samples depend on it and the line's number alone.",
    ),
)


def search_config(values: dict[str, Any]) -> SearchConfig:
    """The search settings of :data:`search`'s and :data:`sampling`'s options, taken out of
    ``values``; refused in one line when they ask for more than the search can give."""
    return SearchConfig(
        beam=values.pop("beam"),
        length_penalty=values.pop("length_penalty"),
        alpha=values.pop("alpha"),
        coverage_penalty=values.pop("coverage_penalty"),
        max_ratio=values.pop("max_ratio"),
        nbest=max(values.pop("nbest"), 1),
        no_unk=values.pop("no_unk"),
        min_len=values.pop("min_len"),
        sampling=values.pop("sampling"),
        temperature=values.pop("temperature"),
        top_k=values.pop("top_k"),
        seed=values.pop("seed"),
    ).check(("--nbest", "--beam"))
