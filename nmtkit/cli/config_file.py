"""``--config FILE`` and ``--dump-config FILE``: a command's options in a YAML or TOML file.

A file's values become the command's defaults (click's default map), so a flag on the command
line always wins, and ``train`` still tells a value the user chose (flag or file) from one it
did not. Keys are the long option names without ``--`` (``max-updates`` or ``max_updates``);
a flag pair such as ``--tf32/--no-tf32`` is one key with a boolean. ``--dump-config`` writes the
effective options of a command line in the same form and stops, so that a run's settings can be
kept, edited and given back with ``--config``.
"""

from __future__ import annotations

import datetime
import functools
import os
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..core.command import GIVEN_IN
from ..core.errors import UserError
from ..core.files import atomic_write
from .options import FilePath, refuse_two_spellings

_YAML = (".yaml", ".yml")


def _key(param: click.Parameter) -> str:
    """The name a file uses for ``param``: its long flag without dashes, else its own name."""
    longs = [o for o in param.opts if o.startswith("--")]
    return (longs[0][2:] if longs else param.name or "").replace("_", "-")


def _keys(command: click.Command) -> dict[str, str]:
    """Every spelling a file may use for an option → the parameter's name."""
    names: dict[str, str] = {}
    for p in command.params:
        if p.name is None or not p.expose_value:
            continue
        for spelling in (p.name, *(o[2:] for o in p.opts if o.startswith("--"))):  # _key(p) is one of them
            names[spelling.replace("-", "_")] = p.name
    return names


def _load(path: str) -> Any:
    """A file's mapping: TOML for a .toml file, YAML otherwise (YAML also reads JSON)."""
    toml = Path(path).suffix.lower() == ".toml"
    try:
        with open(path, "rb") as fh:
            if toml:  # an editor's byte order mark, which YAML's reader skips and TOML's calls a statement
                return tomllib.loads(fh.read().decode("utf-8").removeprefix("\ufeff"))
            return _yaml_load(fh)
    except FileNotFoundError:
        raise click.BadParameter(f"{path}: no such file") from None
    except IsADirectoryError:
        raise click.BadParameter(f"{path}: a directory, not a file") from None
    except UnicodeDecodeError:
        raise click.BadParameter(f"{path}: not UTF-8 text") from None
    except Exception as err:  # tomllib's and yaml's own parse errors: one line with where it broke
        what = "TOML" if toml else "YAML"
        raise click.BadParameter(f"{path}: not valid {what} ({' '.join(str(err).split())})") from None


def _yaml_load(fh: Any) -> Any:
    """YAML's safe reading, but a key given twice in one mapping is an error, as in TOML: YAML's
    reader keeps the last without a word."""
    import yaml  # here: a YAML reader is needed only when a command gets a YAML file

    class Loader(yaml.SafeLoader):  # type: ignore[misc]  # yaml ships no types
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # the keys written here, not those a merge key (<<: *base) brings, which they may override
            written = [k for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"]
            keys = [self.construct_object(k, deep=deep) for k in written]
            seen: set[Any] = set()
            for key, k in zip(keys, written):
                if isinstance(key, (str, int, float, bool)):  # hashable: a list as a key is YAML's own error
                    if key in seen:
                        raise yaml.constructor.ConstructorError(None, None, f"'{key}' given twice", k.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep)

    # YAML 1.2's and JSON's exponents (1e-4, 1.0e4, json.dumps's 1e-05), which YAML 1.1's reader
    # takes for text: numbers, as the file's writer meant and as TOML reads them
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."),
    )
    return yaml.load(fh, Loader)  # a SafeLoader: no object a file names is built


def read_config(
    ctx: click.Context, _param: click.Parameter, path: str | None, command_line_only: tuple[str, ...] = ()
) -> None:
    """A click callback (eager): the file's options become the command's defaults, each checked
    as strictly as the command line checks it (YAML's 5.9 is no count, nor its true a number)."""
    if not path:
        return
    table = _load(path)
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise click.BadParameter(
            f"{path}: expected option names and their values (a mapping), not a {type(table).__name__}"
        )
    names = _keys(ctx.command)
    values: dict[str, Any] = {}
    spelt: dict[str, str] = {}
    for key, value in table.items():
        name = names.get(str(key).replace("-", "_"))
        if name is None or name in ("config", "dump_config", *command_line_only):
            raise click.BadParameter(f"{path}: '{key}' {_not_a_setting(ctx, str(key), name)}")
        if name in spelt:
            raise click.BadParameter(f"{path}: '{spelt[name]}' and '{key}' are one option: give it once")
        param = next(p for p in ctx.command.params if p.name == name)
        if (old := _renamed(ctx, str(key))) is not None and old.name == f"old_{name}":  # the name, not the flag
            click.echo(f"{ctx.command_path}: warning: {path}: '{key}' is deprecated, use '{_key(param)}'", err=True)
        if value is None and _unset_shown(param) and param.get_default(ctx, call=False) in _NO_DEFAULT:
            spelt[name] = str(key)
            continue  # YAML's null, as --dump-config writes an option it leaves unset
        many = getattr(param, "multiple", False) or param.nargs != 1  # -m repeated, score's HYPOTHESES
        if many and not isinstance(value, list):
            value = [value]  # a single checkpoint for a repeatable -m
        for one in value if many else [value]:
            if why := _unfit(param, one):
                raise click.BadParameter(f"{path}: '{key}': {why}")
        value = [_text(param, v) for v in value] if many else _text(param, value)
        values[name], spelt[name] = value, str(key)
    ctx.default_map = {**(ctx.default_map or {}), **values}
    # where each value came from, for the line of one that click's own check refuses (a bound)
    ctx.meta[GIVEN_IN] = {name: f"{path}: '{key}'" for name, key in spelt.items() if name in values}


# an option's default when it has none: None, or click 8.3's sentinel
_NO_DEFAULT = (None, getattr(click.core, "UNSET", None))


def _unset_shown(param: click.Parameter) -> bool:
    """Whether a file may name ``param`` unset: an option of one value (not a flag, nor a list)."""
    return isinstance(param, click.Option) and not param.multiple and param.nargs == 1 and not param.is_flag


def _not_a_setting(ctx: click.Context, key: str, name: str | None) -> str:
    """Why a file may not hold ``key``: an old spelling, an option of the command line alone, or
    none at all."""
    params = ctx.command.params
    spelt = {o[2:].replace("-", "_"): p for p in params if not p.expose_value for o in p.opts if o[:2] == "--"}
    hidden = spelt.get(key.replace("-", "_"))
    if (old := _renamed(ctx, key)) is not None:
        new = next(p for p in params if p.name == (old.name or "")[4:])
        return f"is an old spelling: a file takes '{_key(new)}'"
    if name is not None or hidden is not None:
        return "is an option of the command line alone, not a setting a file keeps"
    return f"is not an option of '{ctx.command_path}'"


def _renamed(ctx: click.Context, key: str) -> click.Parameter | None:
    """The hidden option of an old spelling (:func:`~nmtkit.cli.options.renamed`) that ``key`` spells."""
    for p in ctx.command.params:
        longs = [o[2:].replace("-", "_") for o in p.opts if o[:2] == "--"]
        if not p.expose_value and getattr(p, "hidden", False) and (p.name or "").startswith("old_"):
            if key.replace("-", "_") in longs:
                return p
    return None


def _unfit(param: click.Parameter, value: Any) -> str | None:
    """Why a file's ``value`` cannot be ``param``'s, where click would take it by converting it."""
    if value is None:
        return "no value: give one, or leave the key out"
    if isinstance(value, (list, dict, datetime.date, datetime.time)):
        return _no_value_of_an_option(value)
    if getattr(param, "is_bool_flag", False) or isinstance(param.type, click.types.BoolParamType):
        return None if isinstance(value, bool) else f"true or false, not {value!r}"
    if isinstance(value, bool):
        number = isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType))
        return f"{'a number' if number else 'a ' + param.type.name}, not {str(value).lower()}"
    return _unfit_number(param, value)


def _unfit_number(param: click.Parameter, value: Any) -> str | None:
    whole = isinstance(param.type, click.types.IntParamType)
    if whole and isinstance(value, float):
        return f"a whole number, not {value}"
    if isinstance(value, str) and (whole or isinstance(param.type, click.types.FloatParamType)):
        # a number quoted, as a flag's 'false' is refused: else click's words, without the file's name
        return f"{'a whole number' if whole else 'a number'}, not {value!r}: numbers go unquoted"
    if isinstance(value, int | float) and isinstance(param.type, click.Path | click.File):
        # YAML reads 1.10 as 1.1 and 010 as 8: the name as written is gone
        return f"a file's name, not the number {value}: quote it to give it as text"
    return None


def _text(param: click.Parameter, value: Any) -> Any:
    """A number the file gives an option of text other than a file's name (a list of metrics, a
    choice) as text, as click's own text options take it (a file's name is refused: :func:`_unfit`)."""
    numeric = isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType))
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and not numeric else value


def _no_value_of_an_option(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return f"one value, not a {'list' if isinstance(value, list) else 'table'}"
    # YAML and TOML read 2020-01-01 and 07:32:00 unquoted as a date and a time
    return f"a date or time ({value}), which no option takes: quote it to give it as text"


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


_CHOSEN = (
    click.core.ParameterSource.COMMANDLINE,
    click.core.ParameterSource.DEFAULT_MAP,
    click.core.ParameterSource.ENVIRONMENT,
)


Fills = Callable[[click.Context], dict[str, Any]]
"""What a command line runs with where no option was chosen: the value a recipe or a preset puts
there by parameter name, None for an option the command line makes meaningless."""


def effective(
    ctx: click.Context, fills: Fills | None = None, command_line_only: tuple[str, ...] = ()
) -> list[tuple[str, Any, bool]]:
    """The command's options as a file writes them, in the order of --help: (key, value, chosen),
    chosen when the value came from the command line or --config rather than the default (or what
    ``fills`` puts in its place). A None is the default (unset: TOML has no null), but where
    ``fills`` puts it: the command line makes the option meaningless, and it is left out, as the
    options of ``command_line_only`` are, which a file may not hold."""
    filled = fills(ctx) if fills else {}
    out = []
    for p in ctx.command.params:
        if p.name not in ctx.params or p.name in ("dump_config", *command_line_only):
            continue
        chosen = ctx.get_parameter_source(p.name) in _CHOSEN
        value = ctx.params[p.name] if chosen or p.name not in filled else filled[p.name]
        meaningless = not chosen and p.name in filled and value is None
        if value is not None or not meaningless and _unset_shown(p):
            out.append((_key(p), None if value is None else _plain(value), chosen))
    return out


def write_config(
    ctx: click.Context, path: str, fills: Fills | None = None, command_line_only: tuple[str, ...] = ()
) -> None:
    """Write the effective options to ``path`` (TOML for .toml, else YAML; '-': YAML on stdout):
    those chosen (command line, --config) as settings and the rest as comments, each with the value
    the run takes (``fills``': a preset's or a recipe's, else the default), so that the file given
    back, with any of its comments made a setting, runs as this command line would."""
    toml = Path(path).suffix.lower() == ".toml"
    import tomli_w  # here, as yaml: only --dump-config writes, so the CLI starts without either
    import yaml  # here: a YAML writer is needed only by --dump-config

    def line(key: str, value: Any) -> str:
        if value is None:  # unset: YAML's null, which a file may give back (TOML has none: left out)
            means = getattr(next(p for p in ctx.command.params if _key(p) == key), "unset", None)
            return f"{key}: null" + (f"  # {means}" if means else "")
        if toml:  # tomli-w: JSON's spelling, written here before, let a raw U+007F through (TOML forbids it)
            return tomli_w.dumps({key: value}).rstrip()
        return str(yaml.safe_dump({key: value}, default_flow_style=False, allow_unicode=True, width=10**6)).rstrip()

    _refuse_replacing_other_than_a_dump(path)
    lines = [f"# nmtkit {ctx.command_path.split(maxsplit=1)[-1]}: {DUMP_TITLE}"]
    for k, v, chosen in effective(ctx, fills, command_line_only):
        if v is not None or not toml:
            lines += [text if chosen else f"# {text}" for text in line(k, v).splitlines()]
    text = "\n".join(lines) + "\n"
    torchrun = os.environ.get("WORLD_SIZE", "1") not in ("", "1")  # under it one process writes it, not one each
    if torchrun and os.environ.get("RANK", "0") != "0":
        return
    if path == "-":
        sys.stdout.write(text)
        return
    with atomic_write(path) as fh:
        fh.write(text)


DUMP_TITLE = "options for --config (commented: not chosen)"


def _refuse_replacing_other_than_a_dump(path: str) -> None:
    """A file that is there and is no earlier dump is most likely an input mistyped (the corpus
    of ``--dump-config raw/train.en``): not replaced."""
    target = Path(path)
    if path == "-" or path.startswith(("/dev/", "/proc/")) or not target.is_file() or not target.stat().st_size:
        return  # stdout by a name (/dev/stdout > run.yaml), or nothing to lose
    with open(target, "rb") as fh:
        first = fh.readline(200)
    if not re.match(rb"# nmtkit [^:\n]*: options for --config\b", first):  # 1.0's and 1.1's dumps too
        raise UserError(f"--dump-config {path}: is a file --dump-config did not write: give another name, or remove it")


def config_options(
    fills: Fills | None = None, command_line_only: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--config`` and ``--dump-config`` on a command: with ``--dump-config`` the command writes
    its options (``fills``: what a recipe of the command puts where none was chosen) and stops
    before any work. ``command_line_only``: options a file may not hold (an action such as
    train's ``--reset``, which a file would repeat at every run)."""
    return functools.partial(_config_options, fills=fills, command_line_only=command_line_only)


def _config_options(
    fn: Callable[..., Any], fills: Fills | None, command_line_only: tuple[str, ...]
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any, dump_config: str | None = None, **kwargs: Any) -> Any:
        refuse_two_spellings(click.get_current_context())
        if dump_config is not None:
            return write_config(click.get_current_context(), dump_config, fills, command_line_only)
        return fn(*args, **kwargs)

    run = click.option(
        "--dump-config",
        type=FilePath(allow_dash=True),
        default=None,
        help="Write the effective options (this command line over --config) to FILE and stop: YAML, "
        "or TOML for a .toml name; '-': YAML on stdout.",
    )(run)
    return click.option(
        "--config",
        type=FilePath(),
        is_eager=True,
        expose_value=False,
        callback=functools.partial(read_config, command_line_only=command_line_only),
        # the help is shared by every command: an example key would name an option most lack
        help="Options from a YAML or TOML (.toml) file, keys as the long flags without -- "
        "('NAME: VALUE' for --NAME VALUE); flags on the command line win.",
    )(run)
