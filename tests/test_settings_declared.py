"""Each setting is declared once (nmtkit.core.settings.setting): the command line's --help,
serve's OpenAPI schema and --dump-config take its default, bounds and help from that declaration,
and a config made in Python is held to the same bounds."""

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.cli.train_settings import train_settings
from nmtkit.core.errors import UserError
from nmtkit.core.settings import declared, default_of
from nmtkit.models.config import CoverageConfig, LuongConfig, RNNSearchConfig
from nmtkit.train.config import DEFAULT_LR, SCHEDULES, TrainConfig
from nmtkit.translate.settings import SearchConfig, TranslateOptions

PACKAGE = Path(__file__).resolve().parent.parent / "nmtkit"

CASES = [
    ("translate", SearchConfig, "beam", "--beam"),
    ("translate", SearchConfig, "max_ratio", "--max-output-ratio"),
    ("train", TrainConfig, "lr", "--lr"),
    ("train", TrainConfig, "label_smoothing", "--label-smoothing"),
    ("train", CoverageConfig, "kind", "--coverage"),
]


def _param(command: str, flag: str) -> click.Parameter:
    cmd = main.get_command(click.Context(main), command)
    assert cmd is not None
    return next(p for p in cmd.params if flag in p.opts)


@pytest.mark.parametrize("command, cls, name, flag", CASES)
def test_the_cli_option_is_the_declaration(command, cls, name, flag):
    f, d = declared(cls, name)
    p = _param(command, flag)
    assert p.default == default_of(f)
    assert p.help.startswith(d.help)
    if d.choices:
        assert tuple(p.type.choices) == d.choices
    else:
        assert (p.type.min, p.type.max) == (d.ge if d.ge is not None else d.gt, d.le if d.le is not None else d.lt)
        assert p.type.min_open == (d.gt is not None)
    out = CliRunner().invoke(main, [command, "--help"], terminal_width=1000)
    assert out.exit_code == 0
    helps = " ".join(out.output.split())
    assert " ".join(d.help.split()) in helps  # the help page shows the declared text


@pytest.mark.parametrize("command, cls, name, flag", CASES)
def test_the_help_text_is_written_once_in_the_source(command, cls, name, flag):
    _, d = declared(cls, name)
    head = d.help.split(" (")[0][:40] if len(d.help) > 20 else d.help
    found = [p for p in PACKAGE.rglob("*.py") if head in p.read_text(encoding="utf-8")]
    assert len(found) == 1, (head, found)


@pytest.mark.parametrize("name", ["beam", "max_ratio"])
def test_serves_openapi_schema_is_the_declaration(name):
    pytest.importorskip("fastapi")
    from nmtkit.serve.schema import native_request
    from nmtkit.serve.settings import ServerConfig

    f, d = declared(SearchConfig, name)
    prop = native_request(ServerConfig()).model_json_schema()["properties"][name]
    assert prop["description"] == d.help
    assert prop["default"] == default_of(f)
    assert prop["minimum"] == d.ge


@pytest.mark.parametrize("command, cls, name, flag", [c for c in CASES if c[2] != "lr"])
def test_dump_config_writes_the_declared_default(command, cls, name, flag):
    f, _ = declared(cls, name)
    required = {"translate": ["-m", "model.pt"], "train": ["data-bin", "--save-dir", "runs/x"]}[command]
    out = CliRunner().invoke(main, [command, *required, "--dump-config", "-"])
    assert out.exit_code == 0, out.output
    assert f"# {flag[2:]}: {default_of(f)}" in out.stdout.splitlines()


def test_the_learning_rate_defaults_by_optimizer_in_one_table():
    assert TrainConfig().lr == DEFAULT_LR["adadelta"] == 1.0
    assert TrainConfig(optimizer="adam").lr == DEFAULT_LR["adam"] == 5e-4
    assert TrainConfig(optimizer="adam", lr=3e-4).lr == 3e-4
    help_ = _param("train", "--lr").help
    assert all(f"{k} {v:g}" in help_ for k, v in DEFAULT_LR.items())


def test_a_schedule_is_a_value_and_its_help_names_its_flags():
    help_ = _param("train", "--schedule").help
    assert "--optimizer adam --lr 0.005" in help_ and "--fused-steps" in help_
    assert SCHEDULES["luong"].settings(0.2)["max_epochs"] == 12 and SCHEDULES["luong"].settings(0.0)["max_epochs"] == 10
    assert TrainConfig(**SCHEDULES["cpu"].train).label_smoothing == 0.1


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda: SearchConfig(beam=0), "--beam: 0 is not >= 1"),
        (lambda: SearchConfig(max_ratio=-1.0), "--max-output-ratio: -1 is not >= 0"),
        (lambda: TrainConfig(label_smoothing=1.0), "--label-smoothing: 1 is not < 1"),
        (lambda: TrainConfig(lr=-1.0), "--lr: -1 is not >= 0"),
        (lambda: CoverageConfig("lingustic"), "--coverage: 'lingustic' is not one of none, linguistic, neural"),
        # of another kind: each failed later, deep in torch, or (max_updates 2.5) trained 3 updates
        (lambda: SearchConfig(beam=2.5), "--beam: 2.5, not a whole number"),
        (lambda: SearchConfig(beam=True), "--beam: True, not a whole number"),
        (lambda: TrainConfig(lr="1e-3"), "--lr: '1e-3', not a number"),
        (lambda: TrainConfig(max_updates=2.5), "--max-updates: 2.5, not a whole number"),
        (lambda: RNNSearchConfig(emb=24.0), "emb: 24.0, not a whole number"),  # no declared flag: its name
        # past int64 a traceback in torch; 100,000 layers were built for minutes
        (
            lambda: RNNSearchConfig(hidden=10**20),
            f"--hidden: {10**20} is more than the 1,048,576 a model of nmtkit's may have",
        ),
        (lambda: LuongConfig(layers=100000), "--layers: 100000 is more than the 64 a model of nmtkit's may have"),
        (lambda: RNNSearchConfig.preset_sizes("huge"), "--preset 'huge': not one of paper, small, bench, tiny"),
        (
            lambda: train_settings("rnnsearch", "tiny", "fast", {}, set()),
            "--schedule 'fast': not one of appendix-b, luong, cpu",
        ),
        # a sub-config given as its name or a dict was taken, and train or translate failed on it
        (lambda: RNNSearchConfig(coverage="linguistic"), "coverage: 'linguistic', not a CoverageConfig"),
        (lambda: TranslateOptions(search={"beam": 3}), "search: {'beam': 3}, not a SearchConfig"),
        # a glossary and a dictionary as serve and their files hold them: a TypeError or a ValueError
        (
            lambda: TranslateOptions(glossary=(("dog",),)),
            "glossary: ('dog',) is no (source term, translation) pair of text",
        ),
        (
            lambda: TranslateOptions(glossary={"": "lion"}),
            "glossary: ('', 'lion'): a term and its translation hold a word each",
        ),
        (lambda: TranslateOptions(glossary=[("a", "b"), ("a ", "c")]), "glossary: the term 'a' is given twice"),
        (lambda: TranslateOptions(unk_dict=5), "unk_dict: 5, not a dict of words (str) to their translations (str)"),
        # the fields no option sets: torch refused them at the first update, or the limit went below the source's
        (
            lambda: TrainConfig(rho=1.5),
            "TrainConfig rho 1.5, eps 1e-06: Adadelta's rho lies in [0, 1], its eps above 0",
        ),
        (lambda: TrainConfig(eps=0.0), "TrainConfig rho 0.95, eps 0.0: Adadelta's rho lies in [0, 1], its eps above 0"),
        (lambda: TrainConfig(logits_blas="mkl"), "TrainConfig logits_blas 'mkl': one of auto, torch, numpy"),
        (
            lambda: SearchConfig(max_extra=-3).check(),
            "SearchConfig max_extra -3: the output limit's constant is 0 or more",
        ),
        # a name no option has was a TypeError from TrainConfig
        (
            lambda: train_settings("rnnsearch", "tiny", "appendix-b", {"max_ratio": 1}, set()),
            "'max_ratio' is no option of nmtkit train's (by field name: lr, max_updates, hidden, …)",
        ),
    ],
)
def test_a_config_made_in_python_is_held_to_the_declared_bounds(make, says):
    with pytest.raises(UserError) as err:
        make()
    assert str(err.value) == says


def test_train_settings_takes_none_as_not_given():
    """``values`` may hold every option, None where it was not given: TrainConfig took the Nones,
    which its kinds now refuse."""
    model, cfg = train_settings("rnnsearch", "tiny", "appendix-b", {"max_updates": None, "lr": None}, set())
    assert (cfg.max_updates, cfg.lr) == (TrainConfig().max_updates, TrainConfig().lr) and model.emb == 32


def test_a_glossary_as_a_list_or_a_dict_and_given_as_a_list_are_taken():
    """A list of lists was unhashable deep in the glossary; ``given`` as a list failed on a set's <=."""
    assert TranslateOptions(glossary=[["dog", "chien"]]).glossary == (("dog", "chien"),)
    assert TranslateOptions(glossary={"dog": "chien"}).glossary == (("dog", "chien"),)
    _, cfg = train_settings("rnnsearch", "tiny", "appendix-b", {"max_updates": 7}, ["max_updates"])
    assert cfg.max_updates == 7
