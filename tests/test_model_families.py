"""Each model family owns its config (nmtkit.models.config): a family holds only its own fields,
a flag of another family is refused in one line, the checkpoint stores the family with its fields,
and the flat record of the older formats (nmtkit 0.1 to 1.1) is read as the family it names."""

from dataclasses import fields

import pytest
import torch
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from nmtkit.core.errors import FormatError, UserError
from nmtkit.core.settings import sub_config
from nmtkit.models.build import MODELS, build_model
from nmtkit.models.config import (
    FAMILIES,
    CoverageConfig,
    GRUConfig,
    LuongConfig,
    ModelConfig,
    RNNEncDecConfig,
    RNNSearchConfig,
    every_model_flag,
    from_flat_record,
    model_config,
)
from nmtkit.models.rnnsearch import RNNEncDec
from tests.checkpoints import fake_checkpoint

SIZES = dict(src_vocab=7, tgt_vocab=9, emb=8, hidden=8, align=8)

# What nmtkit 1.1 stored for an RNNsearch with the linguistic coverage (tests/fixtures/v1.1.0's
# rnnsearch.pt, its "model" record): every family's fields, Luong's at their values of the day.
RECORD_1_1 = {
    "arch": "rnnsearch",
    "src_vocab": 7,
    "tgt_vocab": 9,
    "emb": 8,
    "hidden": 8,
    "align": 8,
    "maxout": 8,
    "readout": "prev",
    "encoder": "paper",
    "layers": 4,
    "dropout": 0.0,
    "attention": "local-m",
    "score": "general",
    "input_feed": True,
    "reverse_source": True,
    "window": 10,
    "max_src": 51,
    "window_renorm": False,
    "tie_embeddings": False,
    "layer_norm": False,
    "alignment_head": False,
    "coverage": "linguistic",
}


def test_each_family_holds_only_its_own_fields():
    names = {arch: {f.name for f in fields(cls)} for arch, cls in FAMILIES.items()}
    assert "coverage" in names["rnnsearch"] and "alignment_head" in names["rnnsearch"]
    assert not {"coverage", "alignment_head", "layers"} & names["rnnencdec"]
    assert all("dropout" in own for own in names.values())  # every family's, each with its default
    assert not {"maxout", "readout", "coverage", "tie_embeddings"} & names["luong"]
    assert tuple(MODELS) == tuple(FAMILIES)
    for base in (ModelConfig, GRUConfig):
        with pytest.raises(TypeError, match="is a base: make one of RNNSearchConfig, RNNEncDecConfig, LuongConfig"):
            base()
    with pytest.raises(ValueError, match="RNNEncDec is made from its own family's config, not a RNNSearchConfig"):
        RNNEncDec(RNNSearchConfig(**SIZES))


def test_a_flag_names_one_setting():
    """Within a family no two settings share a flag, and a flag two families have is one declaration."""

    def field_of(cls, name):
        return next(f for f in fields(cls) if f.name == name)

    for family in FAMILIES.values():
        leaves = sum(len(fields(sub_config(f))) if sub_config(f) else 1 for f in fields(family))
        assert len(family.flags()) == leaves
    every = every_model_flag()
    for family in FAMILIES.values():
        for flag, (cls, name) in family.flags().items():
            mine, first = field_of(cls, name), field_of(*every[flag])
            assert (mine.name, mine.default, mine.metadata) == (first.name, first.default, first.metadata), flag
    assert every["coverage"] == (CoverageConfig, "kind") and every["max_fertility"] == (CoverageConfig, "max_fertility")


@pytest.mark.parametrize(
    "arch, flag",
    [
        ("luong", "maxout"),
        ("luong", "coverage"),
        ("rnnencdec", "coverage"),
        ("rnnencdec", "layers"),
        ("rnnsearch", "window"),
    ],
)
def test_a_setting_of_another_family_is_refused_in_one_line(arch, flag, tmp_path):
    value = {"maxout": 8, "coverage": "neural", "layers": 2, "window": 5}[flag]
    with pytest.raises(UserError, match=f"^--{flag} does not apply to --arch {arch}$"):
        model_config(arch, **{flag: value})
    args = ["train", str(tmp_path), "--save-dir", str(tmp_path / "x"), "--arch", arch, f"--{flag}", str(value)]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and f"--{flag} does not apply to --arch {arch}" in out.output
    with pytest.raises(TypeError, match="no model setting"):
        model_config(arch, maxoot=3)


@pytest.mark.parametrize("arch", list(FAMILIES))
def test_flags_and_stored_record_round_trip(arch):
    extra = {"rnnsearch": {"coverage": "linguistic", "max_fertility": 3.0}, "luong": {"layers": 2, "score": "dot"}}
    cfg = model_config(arch, **SIZES, **extra.get(arch, {}))
    assert type(cfg) is FAMILIES[arch] and cfg.arch == arch
    assert model_config(**cfg.flat()) == cfg
    stored = cfg.to_dict()
    assert next(iter(stored)) == "arch" and ModelConfig.from_dict(stored) == cfg
    if arch == "rnnsearch":
        assert stored["coverage"] == {"kind": "linguistic", "max_fertility": 3.0}
        assert cfg.coverage == CoverageConfig("linguistic", 3.0)
    with pytest.raises(FormatError, match="RNNEncDecConfig field: coverage"):
        RNNEncDecConfig.from_dict({**RNNEncDecConfig().to_dict(), "coverage": {"kind": "none"}})
    with pytest.raises(FormatError, match="a rnnsearch model, not a LuongConfig"):
        LuongConfig.from_dict(RNNSearchConfig().to_dict())


def test_train_offers_every_declared_flag_of_every_family():
    out = CliRunner().invoke(main, ["train", "--help"], terminal_width=200)
    assert out.exit_code == 0
    for flag in ("--coverage", "--max-fertility", "--alignment-head", "--readout", "--attention", "--window"):
        assert flag in out.output
    assert list(every_model_flag())[:5] == ["src_vocab", "tgt_vocab", "emb", "hidden", "align"]


def test_the_record_of_1_1_is_read_as_its_family():
    cfg = from_flat_record(RECORD_1_1)
    assert cfg == RNNSearchConfig(**{**SIZES, "maxout": 8}, coverage=CoverageConfig("linguistic"))
    luong = from_flat_record({**RECORD_1_1, "arch": "luong", "coverage": "none", "dropout": 0.2})
    assert luong == LuongConfig(**SIZES, max_src=51)
    encdec = from_flat_record({**RECORD_1_1, "arch": "rnnencdec", "coverage": "none"})
    assert type(encdec) is RNNEncDecConfig and encdec.maxout == 8
    with pytest.raises(FormatError, match="unknown ModelConfig field: colour"):
        from_flat_record({**RECORD_1_1, "colour": "blue"})
    with pytest.raises(FormatError, match="the model's architecture: 'transformer'"):
        from_flat_record({**RECORD_1_1, "arch": "transformer"})
    # a stored value is read as written, even outside today's bounds
    assert from_flat_record({**RECORD_1_1, "arch": "luong", "coverage": "none", "window": 0}).window == 0


def test_the_checkpoint_stores_format_3_and_refuses_a_later_one(tmp_path):
    cfg = model_config(**{**SIZES, "src_vocab": 6, "tgt_vocab": 6}, coverage="neural")
    fake_checkpoint(tmp_path / "m.pt", weights=build_model(cfg).state_dict(), model=cfg)
    raw = torch.load(tmp_path / "m.pt", weights_only=True)
    assert raw["version"] == checkpoint.VERSION == 3
    assert raw["model"]["config"]["arch"] == "rnnsearch"
    assert raw["model"]["config"]["coverage"] == {"kind": "neural", "max_fertility": 2.0}
    assert checkpoint.load(tmp_path / "m.pt").format_version == 3
    torch.save({**raw, "version": 4}, tmp_path / "later.pt")
    with pytest.raises(FormatError, match=r"format version 4 is not supported .this nmtkit reads versions 1 to 3\)$"):
        checkpoint.load(tmp_path / "later.pt")
    # a newer nmtkit's file says so: a format, or a setting, this one does not know
    from nmtkit import __version__

    newer = {**raw, "nmtkit": "99.0.0"}
    torch.save({**newer, "version": 4}, tmp_path / "later.pt")
    with pytest.raises(FormatError, match=f"versions 1 to 3.: nmtkit 99.0.0 wrote it, and this is {__version__}$"):
        checkpoint.load(tmp_path / "later.pt")
    newer["model"] = {**raw["model"], "config": {**raw["model"]["config"], "fancy": 1}}
    torch.save(newer, tmp_path / "later.pt")
    with pytest.raises(FormatError, match=r"field: fancy\): nmtkit 99.0.0 wrote it, and this is"):
        checkpoint.load(tmp_path / "later.pt")
    newer["model"] = {**raw["model"], "config": {**raw["model"]["config"], "arch": "transformer"}}
    torch.save(newer, tmp_path / "later.pt")
    with pytest.raises(FormatError, match=r"'transformer'.*: nmtkit 99.0.0 wrote it, and this is"):
        checkpoint.load(tmp_path / "later.pt")
    torch.save({**newer, "nmtkit": "1.0"}, tmp_path / "older.pt")  # an older writer is no reason
    with pytest.raises(FormatError) as err:
        checkpoint.load(tmp_path / "older.pt")
    assert "wrote it" not in str(err.value)


@pytest.mark.parametrize(
    "arch, typed, flag",
    [
        ("luong", {"attention": "none", "score": "dot"}, "score"),
        ("luong", {"attention": "none", "window": 5}, "window"),
        ("luong", {"attention": "global", "window": 5}, "window"),
        ("luong", {"attention": "local-m", "score": "dot", "align": 8}, "align"),
        ("rnnencdec", {"align": 10}, "align"),
    ],
)
def test_a_setting_the_model_never_reads_is_refused_and_left_out_of_its_config(arch, typed, flag):
    """A sweep over --window with global attention trained the same model each time, without a word."""
    from nmtkit.cli.train_settings import recipe_fills, resolved_settings

    with pytest.raises(UserError, match=f"^--{flag} does nothing here: "):
        resolved_settings(arch, "tiny", "appendix-b", typed, set(typed))
    quiet = {k: v for k, v in typed.items() if k != flag}
    model, cfg = resolved_settings(arch, "tiny", "appendix-b", quiet, set(quiet))
    assert recipe_fills(arch, "tiny", "appendix-b", model, cfg)[flag] is None  # --dump-config writes none


def test_what_a_luong_model_reads_depends_on_its_attention_and_score():
    from nmtkit.models.config import LuongConfig

    assert set(LuongConfig(attention="local-p", score="dot").idle()) == set()  # p_t's layer is align wide
    assert set(LuongConfig(attention="global", score="concat").idle()) == {"window"}
    assert set(LuongConfig(attention="local-m", score="general").idle()) == {"align"}


@pytest.mark.parametrize("arch", list(MODELS))
def test_a_family_says_without_torch_whether_compile_has_steps_to_compile(arch):
    """--compile with a Luong model was refused when the model was built, after the save directory
    was made; the family's config now says it, as its model's steps are."""
    from nmtkit.models.config import model_config
    from nmtkit.train.config import TrainConfig, check_run

    cfg = model_config(arch, src_vocab=6, tgt_vocab=6, emb=4, hidden=4, **({"layers": 1} if arch == "luong" else {}))
    assert type(cfg).compilable == bool(build_model(cfg).step_functions())
    if not type(cfg).compilable:
        with pytest.raises(UserError, match=f"--compile: the {arch} model has no per-position step to compile"):
            check_run(cfg, TrainConfig(compile=True, max_updates=1))
