"""The command line's options, made from the settings' one declaration
(:func:`nmtkit.core.settings.setting`): :func:`option` turns a declared field into a click option
(flag, type, bounds, default, help, former spelling), :func:`config_of` turns the values back into
the config. Also the option families several commands share: verbosity, workers, text settings,
runtime (device, threads, bf16, TF32) and search.
"""

from __future__ import annotations

import dataclasses
import decimal
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from ..align.settings import LinkConfig
from ..core.console import set_verbosity
from ..core.errors import UserError
from ..core.parallel import default_workers
from ..core.settings import Declared, RuntimeConfig, declared, declared_names, default_of, flag_of
from ..text.clean import PRESETS, RULES, rules_named
from ..text.settings import TextConfig
from ..translate.settings import SAMPLING_OPTIONS, SEARCH_OPTIONS, SearchConfig

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
T = TypeVar("T")

_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9}


class DirPath(click.Path):
    """A directory's path: an empty name is refused, where ``Path("")`` is the working directory
    (``--save-dir "$RUN"`` with RUN unset trained into it, its checkpoints among the user's files)."""

    def __init__(self, **kwargs: Any):
        super().__init__(file_okay=False, **kwargs)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value:
            self.fail("'' names nothing: give a directory's name ('.' for this one)", param, ctx)
        if value == "-":  # a file's stdin or stdout elsewhere; here it made a directory of that name
            self.fail("'-' is no directory (stdin and stdout are a file's): './-' names one so called", param, ctx)
        return super().convert(value, param, ctx)


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

    def forward(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None or value == () or value is False:
            return
        if warning:
            click.echo(f"{ctx.command_path}: warning: {warning}", err=True)
        # the new option, absent from the command line, is processed after this one and reads it here
        ctx.default_map = {**(ctx.default_map or {}), dest: value}
        ctx.meta.setdefault(_HANDED, {})[dest] = (param.get_error_hint(ctx), value)

    return forward


def typed(name: str) -> bool:
    """Whether the running command's parameter ``name`` was typed on its command line, whatever its
    value: the settings' own checks see values, so a command hands them the options typed, and one
    typed at its default, which would change nothing, is refused as one typed at another value. A
    --config file's is not: --dump-config writes the idle options as comments at their defaults,
    and a comment made a setting changes nothing."""
    ctx = click.get_current_context(silent=True)
    source = click.core.ParameterSource.COMMANDLINE
    return ctx is not None and name in ctx.params and ctx.get_parameter_source(name) is source


_HANDED = "nmtkit.handed"  # ctx.meta: by parameter, the other spelling given and its value


def refuse_two_spellings(ctx: click.Context) -> None:
    """A usage error where a parameter was given under both its spellings with two values
    (``train A --data B``, ``-o X --dest-dir Y``): the command line holds one of them, which
    would otherwise be taken without a word."""
    for dest, (other, value) in ctx.meta.get(_HANDED, {}).items():
        param = next(p for p in ctx.command.params if p.name == dest)
        if ctx.get_parameter_source(dest) is click.core.ParameterSource.COMMANDLINE and ctx.params[dest] != value:
            raise click.UsageError(
                f"{other} ({value}) and {param.get_error_hint(ctx)} ({ctx.params[dest]}) give two values: give one"
            )


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


def _click_type(f: dataclasses.Field[Any], d: Declared) -> Any:
    """The click type of a declared field: its choices, or its numeric range."""
    if d.choices is not None:
        return click.Choice(d.choices)
    base = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    low = d.ge if d.ge is not None else d.gt
    high = d.le if d.le is not None else d.lt
    opened = {"min_open": d.gt is not None, "max_open": d.lt is not None}
    if low is None and high is None:
        return {"int": int, "float": float}.get(base)
    if base.startswith("int"):
        return click.IntRange(None if low is None else int(low), None if high is None else int(high), **opened)
    if base.startswith("float"):
        return click.FloatRange(low, high, **opened)
    return None


class DeclaredOption(click.Option):
    """A declared setting's option; ``unset`` is what its None default stands for (the help's
    default), which --dump-config writes beside the key that it leaves unset."""

    def __init__(self, *args: Any, unset: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.unset = unset


def option(
    cls: type, name: str, *, note: str = "", default: Any = dataclasses.MISSING, dest: str | None = None
) -> Decorator:
    """The command-line option of the setting ``name`` of ``cls``, made from its declaration
    (:func:`nmtkit.core.settings.setting`): flag, type, bounds, default and help; a boolean is
    ``--x/--no-x`` when its default is on, a flag otherwise; ``note`` is added to the help (what
    the value means to this command); ``default`` replaces the declared one (serve: a config's);
    ``dest`` names the command's parameter when not the field's name."""
    f, d = declared(cls, name)
    param = dest or name
    value = default_of(f) if default is dataclasses.MISSING else default
    spelled = flag_of(name, d)
    flag = spelled.split("/")[0]
    help_ = f"{d.help} {note}".strip()
    if d.default_help is not None:
        help_ += f" [default: {d.default_help}]"
    extra: dict[str, Any] = {"help": help_, "default": value, "show_default": d.default_help is None}
    extra |= {"cls": DeclaredOption, "unset": d.default_help}
    base = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    if base == "bool":
        spelling = spelled if "/" in spelled else f"{flag}/--no-{flag[2:]}" if value else flag
        made = click.option(spelling, param, is_flag=not value or None, **extra)
    else:
        made = click.option(flag, param, type=_click_type(f, d), **extra)
    return made if d.old is None else options(made, renamed(d.old, flag, param, type=_click_type(f, d)))


def options_of(cls: type, *names: str, note: str = "", config: Any = None) -> Decorator:
    """The options of several declared settings of ``cls``, in this order (defaults from
    ``config`` when given)."""
    return options(*(option(cls, n, note=note, default=_default(config, n)) for n in names))


def _default(config: Any, name: str) -> Any:
    return dataclasses.MISSING if config is None else getattr(config, name)


def config_of(cls: type[T], values: dict[str, Any], **fixed: Any) -> T:
    """A config of ``cls`` from the values of its declared options, taken out of ``values``
    (what is not there keeps its default), and ``fixed`` values."""
    mine = {n: values.pop(n) for n in declared_names(cls) if n in values}
    return cls(**mine, **fixed)


def link_config(values: dict[str, Any], model_paths: tuple[str, ...]) -> LinkConfig:
    """The link settings of their options, taken out of ``values``; one typed at its default is
    refused where it would change nothing, as one typed at another value (the command's own
    refusal sees only values)."""
    cfg = config_of(LinkConfig, values)
    chosen = [name for name in declared_names(LinkConfig) if typed(name)]
    if chosen:
        from ..translate.both_ways import directions, refuse_idle_links

        cfg.check(chosen)
        refuse_idle_links(directions(list(model_paths))[1] if len(model_paths) > 1 else [], cfg, chosen)
    return cfg


def models(help: str) -> Decorator:
    """``-m/--model CKPT``, required and repeatable (an ensemble), on every command that runs a model."""
    return click.option(
        "-m", "--model", "model_paths", required=True, multiple=True, type=FilePath(checkpoint=True), help=help
    )


def data(help: str, **extra: Any) -> Decorator:
    """``--data DATA_BIN``: a binarized corpus (``preprocess --vocab``'s directory), on every command
    that reads one."""
    return click.option("--data", "data_bin", type=DirPath(), metavar="DATA_BIN", help=help, **extra)


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
        type=DirPath(),
        help="Directory to write into (created if missing).",
    ),
    renamed("-o/--out", "-d/--dest-dir", "out_dir", type=DirPath()),
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
        help="Nothing on stderr but errors (and a deprecated spelling's warning): no logs, warnings, summaries "
        "or progress.",
    ),
    click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=_set_verbosity,
        help="Also log the details: the device and threads of a command that computes, and train's resolved settings.",
    ),
)

workers = click.option(
    "-j",
    "--workers",
    type=click.IntRange(1, 1024),
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
        f"'bible' = every rule but entities, for the embedded Bible corpus) or rules, comma-separated: "
        f"{', '.join(RULES)}.",
    ),
    options_of(TextConfig, "normalize_punct", "aggressive_dash", "lowercase"),
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


runtime = options_of(RuntimeConfig, "device", "threads", "bf16", "tf32")

# the same, with int8 layers: for the commands that only run a trained model forward
inference_runtime = options(runtime, option(RuntimeConfig, "int8"))
# the same, with the BLAS of the loss's widest product: for train, the one command that runs the loss
train_runtime = options(runtime, option(RuntimeConfig, "logits_blas"))


class FilePath(click.Path):
    """A file's path, not a directory's: an empty name and one that ends in "/" are refused, where
    a file of the directory's name would be written (or the empty name taken for stdout). A
    ``checkpoint``'s: a run's directory is refused naming the checkpoints in it."""

    def __init__(self, checkpoint: bool = False, **kwargs: Any):
        super().__init__(dir_okay=False, **kwargs)
        self.checkpoint = checkpoint

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if self.checkpoint and os.path.isdir(value):  # before the '/' check: a shell completes a directory so
            held = [os.path.join(value, n) for n in ("best.pt", "last.pt") if os.path.isfile(os.path.join(value, n))]
            if held:
                self.fail(f"{value!r} is a run's directory: give a checkpoint in it, {' or '.join(held)}", param, ctx)
        if isinstance(value, str) and (not value or value.endswith(("/", os.sep))):
            dash = ", or '-' for stdout" if self.allow_dash else ""
            self.fail(
                f"{value!r} names {'nothing' if not value else 'a directory'}: give a file's name{dash}", param, ctx
            )
        return super().convert(value, param, ctx)


# a command's results: stdout, or a file written whole or not at all
output = click.option(
    "-o",
    "--output",
    type=FilePath(allow_dash=True),
    help="Write here (atomically) [default: stdout].",
)


def refuse_idle_runtime(values: dict[str, Any], why: str) -> None:
    """Refuse, in one line, a runtime option (:data:`runtime`'s, in ``values``) typed where no model
    runs (``why``): it would change nothing."""
    idle = next((name for name in values if typed(name)), None)
    if idle is not None:
        flag = f"--{idle.replace('_', '-')}"
        raise UserError(f"{flag} sets how a model computes, and none runs here ({why}): leave {flag} out")


def runtime_config(values: dict[str, Any]) -> RuntimeConfig:
    """The runtime settings of :data:`runtime`'s (or :data:`inference_runtime`'s) options, taken out
    of ``values``."""
    return config_of(RuntimeConfig, values)


def count(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """A click callback: '348M' → 348000000, '2.5k' → 2500 (None stays None)."""
    if value is None:
        return None
    text = value.strip().lower().replace(",", "").replace("_", "")
    scale = _SUFFIXES.get(text[-1:], 1)
    try:  # decimal: 2.01k is 2010, where a float made it 2009.9999999999998
        n = decimal.Decimal(text[:-1] if scale > 1 else text) * scale
    except decimal.InvalidOperation:
        n = decimal.Decimal("nan")
    if not n.is_finite() or n > 10**18:  # past any corpus: 1e400, which a float had made inf
        raise click.BadParameter(f"'{value}' is not a count such as 348M, 2.5k or 1000000")
    if n < 1:  # 0.4 was taken as 0, and kept nothing
        raise click.BadParameter(f"'{value}' must be at least 1")
    if n != int(n):  # 1.5 was taken as 1 without a word
        raise click.BadParameter(f"'{value}' is not a whole count")
    return int(n)


search = options(
    options_of(SearchConfig, *SEARCH_OPTIONS),
    click.option(
        "--nbest",
        # with --sampling, a line's samples, all in memory at once
        type=click.IntRange(0, 10_000),
        default=0,
        show_default=True,
        help="Write the N best (1: the best alone) as Moses n-best lines: "
        "'i ||| text ||| F0= log p ||| normalised log p', i from 0 (0: the best, as plain text).",
    ),
)

sampling = options_of(SearchConfig, *SAMPLING_OPTIONS)

# how the links of a model each way are combined: align, translate and serve
links = options_of(LinkConfig, *declared_names(LinkConfig))


def search_config(values: dict[str, Any]) -> SearchConfig:
    """The search settings of :data:`search`'s and :data:`sampling`'s options, taken out of
    ``values``; refused in one line when they ask for more than the search can give."""
    nbest = max(values.pop("nbest"), 1)
    # one typed over a --config file's value undoes it: not idle, even where it says the default
    configured = _configured()
    _file_s_idle_at_default(values, configured)
    given = [name for name in (*SAMPLING_OPTIONS, "beam", "coverage_penalty") if typed(name) and name not in configured]
    return _alpha_used(config_of(SearchConfig, values, nbest=nbest).check(("--nbest", "--beam"), given))


def length_penalty(values: dict[str, Any]) -> SearchConfig:
    """A search config of the options --length-penalty and --alpha alone, taken out of ``values``."""
    _file_s_idle_at_default(values, _configured())
    return _alpha_used(config_of(SearchConfig, values))


def _configured() -> Mapping[str, Any]:
    """The running command's values from its --config file (click's default map)."""
    ctx = click.get_current_context(silent=True)
    return (ctx.default_map or {}) if ctx is not None else {}


def _file_s_idle_at_default(values: dict[str, Any], configured: Mapping[str, Any]) -> None:
    """A --config file's search values the run has no use for (sampling's without --sampling,
    --alpha beside another length penalty) put back at their defaults: ignored, where the same on
    the command line is refused (a file dumped for one search serves another)."""
    default = SearchConfig()
    idle = [] if values.get("sampling") else ["temperature", "top_k", "seed"]
    idle += [] if values.get("length_penalty", default.length_penalty) in ("power", "gnmt") else ["alpha"]
    for name in idle:
        if name in values and name in configured and not typed(name):
            values[name] = getattr(default, name)


def _alpha_used(search: SearchConfig) -> SearchConfig:
    # here, not in check(): a server's --alpha stands beside a request's other length penalty
    if (search.alpha != SearchConfig.alpha or typed("alpha")) and search.length_penalty not in ("power", "gnmt"):
        raise UserError(f"--alpha is the exponent of --length-penalty power and gnmt, not {search.length_penalty}")
    return search
