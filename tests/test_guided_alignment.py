"""Guided alignment: word links into the corpus, onto subword units, and into a loss on the
attention whose gradient the fused recurrence gives as the reference loop does."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import torch

from nmtkit.align.links import unit_links, word_ids
from nmtkit.core.errors import UserError
from nmtkit.core.extras import install_command
from nmtkit.data.batching import collate, guide
from nmtkit.data.binarize import binarize_corpus
from nmtkit.data.binarized import Corpus
from nmtkit.models import fused
from nmtkit.models.build import build_model
from nmtkit.models.loss import alignment_cross_entropy
from tests.conftest import TINY_ADAM
from tests.test_cli import one_error_line, run
from tests.test_corpus import make_corpus
from tests.test_fused import batch, tiny_model
from tests.test_luong import tiny as tiny_luong

FAKE_EFLOMAL = """\
import sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2])) if "--overwrite" not in sys.argv else \
    dict(zip(sys.argv[2::2], sys.argv[3::2]))
src = open(args["-s"], encoding="utf-8").read().splitlines()
tgt = open(args["-t"], encoding="utf-8").read().splitlines()
with open(args["-f"], "w") as f, open(args["-r"], "w") as r:
    for s, t in zip(src, tgt):
        n = min(len(s.split()), len(t.split()))
        f.write(" ".join(f"{i}-{i}" for i in range(n)) + "\\n")              # the diagonal
        r.write(" ".join(f"{i}-{i}" for i in range(0, n, 2)) + " 0-1\\n" if n > 1 else "\\n")
"""


def fake_eflomal(directory):
    """A stand-in for eflomal's eflomal-align program (not installed by the dev extras): forward
    links i-i, reverse links every other i-i plus 0-1; the directory it is in."""
    import sys

    directory.mkdir(parents=True, exist_ok=True)
    program = directory / "eflomal-align"
    program.write_text(f"#!{sys.executable}\n" + FAKE_EFLOMAL, encoding="utf-8")
    program.chmod(0o755)
    return directory


def test_word_align_symmetrises_the_aligner_s_two_directions(tmp_path, monkeypatch, capsys):
    from nmtkit.align.statistical import word_align

    monkeypatch.setenv("PATH", str(fake_eflomal(tmp_path / "bin")))
    monkeypatch.setattr("sys.executable", str(tmp_path / "no-venv" / "python"))  # not the venv's eflomal
    (tmp_path / "c.en").write_text("A B C\nX\n\n", encoding="utf-8")
    (tmp_path / "c.fr").write_text("a b c d\nx y\nz\n", encoding="utf-8")
    done = word_align(tmp_path / "c.en", tmp_path / "c.fr", tmp_path / "c.links")
    # forward 0-0 1-1 2-2, reverse 0-0 2-2 0-1: grow-diag-final-and starts from the intersection
    # (0-0 2-2) and grows into the union's neighbours that align a word still unaligned (0-1: target
    # word 1; 1-1: source word 1); a pair with one link in one direction keeps it (final-and)
    assert (tmp_path / "c.links").read_text().splitlines() == ["0-0 0-1 1-1 2-2", "0-0", ""]
    assert done["pairs"] == 3 and done["links"] == 5
    (tmp_path / "l.en").write_text("A B\n" + "w " * 1024 + "\n", encoding="utf-8")  # eflomal's reader leaves it out
    (tmp_path / "l.fr").write_text("a b\nw\n", encoding="utf-8")
    word_align(tmp_path / "l.en", tmp_path / "l.fr", tmp_path / "l.links")
    assert (
        "warning: 1 pair with a side of 1,024 words or more (line 2): eflomal gives them no link"
        in capsys.readouterr().err
    )
    (tmp_path / "e.en").write_text("\n \n\n", encoding="utf-8")  # a side of empty lines: empty links, exit 0
    with pytest.raises(UserError, match="e.en: holds only empty lines, no word to align"):
        word_align(tmp_path / "e.en", tmp_path / "c.fr", tmp_path / "e.links")
    assert not (tmp_path / "e.links").exists()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(UserError, match=re.escape(f"eflomal is not installed: {install_command('align')} (")):
        word_align(tmp_path / "c.en", tmp_path / "c.fr", tmp_path / "d.links")
    assert not (tmp_path / "d.links").exists()


def diagonal_links(clean, split="train", suffix="links"):
    """Links i-i over each pair's shorter side, but none for its first target word."""
    src = (clean / f"{split}.en").read_text(encoding="utf-8").splitlines()
    tgt = (clean / f"{split}.fr").read_text(encoding="utf-8").splitlines()
    lines = [" ".join(f"{i}-{i}" for i in range(1, min(len(s.split()), len(t.split())))) for s, t in zip(src, tgt)]
    (clean / f"{split}.{suffix}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return lines


def linked_corpus(raw, tmp_path):
    """The test corpus binarized with diagonal_links: its data-bin."""
    make_corpus(raw, tmp_path)
    diagonal_links(tmp_path / "clean")
    binarize_corpus(
        {s: tmp_path / "clean" / s for s in ("train", "valid")},
        ("en", "fr"),
        tmp_path / "vocab",
        tmp_path / "linked",
        align_suffix="links",
    )
    return tmp_path / "linked"


def test_a_word_split_in_three_links_each_of_its_pieces_and_an_unlinked_word_none():
    source = ["the", "Ever@@", "last@@", "ing", "said"]  # words: the Everlasting said
    target = ["l'", "Éter@@", "nel", "dit"]  # words: l' Éternel dit
    flat = unit_links([(1, 1), (2, 2)], word_ids(source), word_ids(target), "here")
    pairs = sorted(map(tuple, flat.reshape(-1, 2).tolist()))
    assert pairs == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2), (4, 3)]
    assert not any(s == 0 for s, _ in pairs) and not any(t == 0 for _, t in pairs)  # "the", "l'"
    with pytest.raises(UserError, match="here: link 3-1 is out of range: the pair has 3 source and 3 target"):
        unit_links([(3, 1)], word_ids(source), word_ids(target), "here")


def test_the_guide_spreads_each_target_word_over_its_links_and_links_eos_with_eos():
    g = guide([np.array([0, 0, 1, 0, 2, 1])], [3], [2], (4, 5))  # links 0-0 1-0 2-1, padded
    assert g.shape == (1, 4, 5)
    assert torch.allclose(g[0, 0], torch.tensor([0.5, 0.5, 0, 0, 0]))
    assert torch.allclose(g[0, 1], torch.tensor([0, 0, 1.0, 0, 0]))
    assert torch.allclose(g[0, 2], torch.tensor([0, 0, 0, 1.0, 0]))  # </s> (target 2) → </s> (source 3)
    assert g[0, 3].sum() == 0  # padding


def test_the_alignment_loss_is_the_cross_entropy_of_guided_rows_only():
    alpha = torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]])
    g = torch.tensor([[[0.5, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])
    total, rows = alignment_cross_entropy(alpha, g, eps=0.0)
    assert rows == 2
    assert math.isclose(float(total), -(0.5 * math.log(0.7) + 0.5 * math.log(0.2) + math.log(0.6)), rel_tol=1e-6)
    # attention that aligns the word fed in: step i is held to row i − 1, a step fed <pad> to nothing
    shifted, rows = alignment_cross_entropy(alpha, g, fed=torch.tensor([[True, True, True]]), eps=0.0)
    assert rows == 1 and math.isclose(float(shifted), -(0.5 * math.log(0.1) + 0.5 * math.log(0.8)), rel_tol=1e-6)
    g[0, 1, 1] = 1.0
    padded, rows = alignment_cross_entropy(alpha, g, fed=torch.tensor([[True, True, False]]), eps=0.0)
    assert rows == 1 and math.isclose(float(padded), float(shifted), rel_tol=1e-6)


def guided_grads(model, on, guide_, weight=0.7):
    fused.use_fused(model, on)
    src, mask, tgt = batch()
    model.zero_grad(set_to_none=True)
    out = model(src, mask, tgt[:, :-1], tgt[:, 1:], guide=guide_)
    loss, align = out.loss, out.align_loss
    (loss + weight * align).backward()
    return float(align.detach()), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


def test_the_alignment_gradient_through_the_fused_recurrence_equals_the_reference_loop():
    model = tiny_model("rnnsearch")
    src, mask, tgt = batch()
    g = torch.zeros(src.shape[0], tgt.shape[1] - 1, src.shape[1])
    rng = torch.Generator().manual_seed(3)
    for b, (m, n) in enumerate(zip(mask.sum(1).tolist(), (tgt[:, 1:] != 0).sum(1).tolist())):
        g[b, torch.arange(n), torch.randint(0, m, (n,), generator=rng)] = 1.0
    ref_loss, ref = guided_grads(model, False, g)
    got_loss, got = guided_grads(model, True, g)
    assert math.isclose(ref_loss, got_loss, rel_tol=1e-5)
    assert ref.keys() == got.keys()
    for k in ref:
        assert torch.allclose(ref[k], got[k], rtol=1e-4, atol=1e-6), k
    # and the guide moves the attention's gradient: without it the gradients differ
    fused.use_fused(model, True)
    model.zero_grad(set_to_none=True)
    model(src, mask, tgt[:, :-1], tgt[:, 1:]).loss.backward()
    assert not torch.allclose(model.attention.v_a.weight.grad, got["attention.v_a.weight"])


@pytest.mark.parametrize("score", ["general", "location"])
def test_luong_attention_takes_the_alignment_gradient(score):
    torch.manual_seed(0)
    model = build_model(tiny_luong(score=score))
    src, mask, tgt = batch()
    g = torch.zeros(src.shape[0], tgt.shape[1] - 1, src.shape[1])
    g[:, :, 0] = 1.0
    out = model(src, mask, tgt[:, :-1], tgt[:, 1:], guide=g)
    out.align_loss.backward()
    fed = (tgt[:, :-1] != 0)[:, 1:].sum() if model.attention_follows_input() else g.shape[0] * g.shape[1]
    assert int(out.align_positions) == int(fed)  # with a word fed in, padded steps take no loss
    assert model.attention.W_a.weight.grad.abs().sum() > 0 and model.W_s.weight.grad is None  # no path to the output


def test_links_reach_the_corpus_on_subword_units(raw, tmp_path):
    make_corpus(raw, tmp_path)
    clean = tmp_path / "clean"
    lines = diagonal_links(clean)
    manifest = binarize_corpus(
        {s: clean / s for s in ("train", "valid")},
        ("en", "fr"),
        tmp_path / "vocab",
        tmp_path / "linked",
        align_suffix="links",
    )
    corpus = Corpus(tmp_path / "linked")
    links, (src, tgt) = corpus.links("train"), corpus.split("train")
    assert corpus.links("valid") is None and Corpus(tmp_path / "bin").links("train") is None
    assert manifest.splits["train"].link_count == sum(len(a) for a in links) // 2
    for i, line in enumerate(lines):
        pairs = links[i].reshape(-1, 2)
        assert len(pairs) >= len(line.split())  # a word's pieces each get its link
        assert (pairs[:, 0] < len(src[i])).all() and (pairs[:, 1] < len(tgt[i])).all()
    batch_ = collate(src, tgt, np.arange(len(src)), links=links)
    assert batch_["guide"].shape == (*batch_["tgt_out"].shape, batch_["src"].shape[1])


@pytest.mark.parametrize(
    "bad, match",
    [
        ("0-99", "link 0-99 is out of range"),
        ("0-1 x", "not Pharaoh alignment pairs"),
        ("0-1-2", "not Pharaoh alignment pairs"),
        (None, "has 5 lines but the train split 6 pairs"),
    ],
)
def test_bad_link_files_are_one_line_and_exit_2(raw, tmp_path, bad, match):
    make_corpus(raw, tmp_path)
    clean = tmp_path / "clean"
    lines = diagonal_links(clean)
    lines = lines[:-1] if bad is None else [bad] + lines[1:]
    (clean / "train.links").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    r = run(
        "preprocess",
        "-s",
        "en",
        "-t",
        "fr",
        "--train",
        clean / "train",
        "--vocab",
        tmp_path / "vocab",
        "-d",
        tmp_path / "linked",
        "--align-suffix",
        "links",
        "-j",
        1,
    )
    one_error_line(r, match)
    assert not (tmp_path / "linked" / "manifest.json").exists()


def train_args(data_bin, save_dir, *extra):
    return (
        "train",
        data_bin,
        "--save-dir",
        save_dir,
        "--device",  # compared with fresh computations on the CPU
        "cpu",
        *TINY_ADAM,
        "--batch-size",
        "2",
        "--max-updates",
        "4",
        "--valid-every",
        "4",
        "--log-every",
        "2",
        "--no-valid-bleu",
        "--threads",
        "1",
        *extra,
    )


def test_guided_training_logs_its_term_and_a_corpus_without_links_is_refused(raw, tmp_path):
    make_corpus(raw, tmp_path)
    clean = tmp_path / "clean"
    diagonal_links(clean)
    binarize_corpus(
        {s: clean / s for s in ("train", "valid")},
        ("en", "fr"),
        tmp_path / "vocab",
        tmp_path / "linked",
        align_suffix="links",
    )
    r = run(*train_args(tmp_path / "linked", tmp_path / "run", "--guided-alignment-weight", "0.5", "--fused-steps"))
    assert r.exit_code == 0, r.output
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    ce = [e["train_align_ce"] for e in logged if "train_align_ce" in e]
    assert len(ce) == 2 and all(0 < x < 20 for x in ce)
    # a corpus with links trains without the loss, and one without links refuses it
    assert run(*train_args(tmp_path / "linked", tmp_path / "plain")).exit_code == 0
    one_error_line(
        run(*train_args(tmp_path / "bin", tmp_path / "refused", "--guided-alignment-weight", "0.5")),
        "has no word links",
    )


@pytest.mark.parametrize("arch, values", [("rnnencdec", {}), ("luong", {"attention": "none"})])
def test_a_model_without_attention_refuses_guided_alignment_before_training(arch, values):
    from nmtkit.cli.train_settings import train_settings

    with pytest.raises(UserError, match=f"--guided-alignment-weight trains the attention: --arch {arch}"):
        train_settings(arch, "tiny", "appendix-b", {"guided_alignment_weight": 0.5, **values}, set())


@pytest.mark.parametrize("reader", [(), ("--alignment-head",)], ids=["attention", "head"])
def test_the_logged_alignment_loss_is_the_models_on_the_batches_it_trained_on(raw, tmp_path, reader):
    """train_align_ce in metrics.jsonl, recomputed from scratch: the saved model (its rate 0, so
    the weights the updates saw) on the minibatches the run drew, through the corpus's links;
    the attention's, or the alignment head's."""
    from nmtkit import checkpoint
    from nmtkit.data.batching import Batches

    linked_corpus(raw, tmp_path)
    args = list(train_args(tmp_path / "linked", tmp_path / "run", "--guided-alignment-weight", "0.5", *reader))
    args[args.index("--lr") + 1] = "0"
    assert run(*args).exit_code == 0
    logged = [
        json.loads(line)["train_align_ce"]
        for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
        if "train_align_ce" in line
    ]
    ckpt = checkpoint.load(tmp_path / "run" / "last.pt")
    model = checkpoint.model_of(ckpt, "last.pt").eval()
    assert model.has_alignment_head() == bool(reader)
    corpus = Corpus(tmp_path / "linked")
    (src, tgt), links = corpus.split("train"), corpus.links("train")
    cfg = ckpt.training.config
    batches = iter(Batches(src.sizes, tgt.sizes, cfg.batch_size, cfg.pool, cfg.max_len, cfg.seed))
    drawn = [next(batches) for _ in range(4)]  # 4 updates, over epochs as the run drew them, logged every 2
    fresh = []
    with torch.no_grad():
        for pair in (drawn[:2], drawn[2:]):
            total = words = 0.0
            for idx in pair:
                b = collate(src, tgt, idx, links=links)
                out = model(b["src"], b["src_mask"], b["tgt_in"], b["tgt_out"], guide=b["guide"])
                total, words = total + float(out.align_loss), words + float(out.align_positions)
            fresh.append(total / words)
    assert logged == pytest.approx(fresh, rel=1e-4)


def head_model():
    from nmtkit.models.config import model_config
    from tests.test_fused import TINY

    torch.manual_seed(0)
    return build_model(model_config(arch="rnnsearch", alignment_head=True, **TINY))


def test_the_alignment_head_starts_as_the_attention_and_learns_alone():
    """At first A = α (β = 1, the products ≈ 0); its loss trains the head only, the translation
    model not at all; and a guided word the aligner left unlinked is trained toward </s>."""
    from nmtkit.models.loss import unlinked_to_end

    model = head_model()
    src, mask, tgt = batch()
    enc = model.encode(src, mask)
    t, alpha = model.teacher_forced(enc, tgt[:, :-1])
    a = model.head_alignment_logp(enc, t, tgt[:, 1:], alpha).exp()
    real = mask.unsqueeze(1).expand_as(a)
    assert torch.allclose(a[real], alpha[real], atol=1e-3)
    g = torch.zeros(src.shape[0], tgt.shape[1] - 1, src.shape[1])
    g[0, 0, 2] = 1.0
    out = model(src, mask, tgt[:, :-1], tgt[:, 1:], guide=g)
    out.align_loss.backward()
    grads = {k for k, p in model.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert grads == {"align_head.W_q.weight", "align_head.W_k.weight", "align_head.W_k.bias", "align_head.beta"}
    n_real = int((tgt[:, 1:] != 0).sum())
    assert int(out.align_positions) == n_real  # every real target word is guided: to a link or to </s>
    full = unlinked_to_end(g, mask, tgt[:, 1:])
    assert full[0, 0, 2] == 1 and full[0, 0].sum() == 1
    assert full[1, 0, 5] == 1 and full[3, 0, 0] == 1 and full[1, 5].sum() == 0  # </s> of lengths 6, 1; padding


def test_forced_alignment_reads_the_head_and_search_leaves_it_to_force():
    from nmtkit.translate.search import alignment, aligns_as_it_searches, force

    model = head_model().eval()
    with torch.no_grad():
        for p in model.parameters():  # a head that differs from the attention
            p.normal_(0, 0.3)
    src, mask, tgt = batch()
    tgt[:, 0] = 2  # <s>, as force feeds it
    tgt_out = tgt[:, 1:]
    enc = model.encode(src, mask)
    _, _, maps = force(model, enc, tgt_out)
    t, alpha = model.teacher_forced(enc, tgt[:, :-1])
    head = model.head_alignment_logp(enc, t, tgt_out, alpha).exp()
    assert torch.allclose(maps, head, atol=1e-5) and not torch.allclose(maps, alpha, atol=1e-2)
    assert torch.allclose(alignment(model, enc, tgt_out), maps, atol=1e-6)  # unscored: no walk, the same
    plain = tiny_model("rnnsearch").eval()  # no head: the walk's attention
    enc = plain.encode(src, mask)
    assert torch.equal(alignment(plain, enc, tgt_out), force(plain, enc, tgt_out)[2])
    assert not aligns_as_it_searches(model) and aligns_as_it_searches(tiny_model("rnnsearch"))


@pytest.mark.parametrize("arch, extra", [("rnnsearch", {}), ("luong", {"guided_alignment_weight": 0.5})])
def test_the_alignment_head_needs_links_and_rnnsearch(arch, extra):
    from nmtkit.cli.train_settings import train_settings

    with pytest.raises(UserError, match="--alignment-head"):
        train_settings(arch, "tiny", "appendix-b", {"alignment_head": True, **extra}, {"alignment_head"})


def test_the_head_is_clipped_on_its_own_so_the_translation_model_s_update_is_unchanged():
    from nmtkit.train.step import clip

    model = head_model()
    for name, p in model.named_parameters():
        p.grad = torch.full_like(p, 100.0 if name.startswith("align_head.") else 1e-4)
    before = {k: p.grad.clone() for k, p in model.named_parameters() if not k.startswith("align_head.")}
    norm = clip(model, 1.0)
    assert math.isclose(float(norm), math.sqrt(sum(float(g.pow(2).sum()) for g in before.values())), rel_tol=1e-4)
    assert all(torch.equal(p.grad, before[k]) for k, p in model.named_parameters() if k in before)
    head = torch.cat([p.grad.flatten() for p in model.align_head.parameters()])
    assert math.isclose(float(head.norm()), 1.0, rel_tol=1e-4)


def test_head_only_s_zero_norm_is_on_the_model_s_device():
    """--head-only: the frozen model has no gradient; its norm is a zero where the model is, not a
    CPU tensor that every update would copy to the GPU (the meta device stands in for it here)."""
    from nmtkit.train.step import clip

    model = head_model().to("meta")
    for p in model.align_head.parameters():
        p.grad = torch.ones_like(p)
    norm = clip(model, 1.0)
    assert norm.device.type == "meta" and norm.shape == ()
    plain = tiny_model("rnnsearch").to("meta")  # no head, and no gradient at all: a zero there too
    assert clip(plain, 1.0).device.type == "meta"


@pytest.mark.parametrize("had_head", [True, False], ids=["its-head", "a-new-head"])
def test_head_only_trains_the_head_and_leaves_the_translation_model_as_it_was(raw, tmp_path, had_head):
    """--head-only from a trained model: every weight but the head's is the model's own after the
    updates, the head's have moved; a model trained without a head gets a new one."""
    from nmtkit import checkpoint

    data = linked_corpus(raw, tmp_path)
    first = ["--guided-alignment-weight", "0.5", "--alignment-head"] if had_head else []
    assert run(*train_args(data, tmp_path / "base", *first)).exit_code == 0
    base = checkpoint.load(tmp_path / "base" / "last.pt").weights
    r = run(
        *train_args(data, tmp_path / "head", "--guided-alignment-weight", "0.5", "--alignment-head"),
        "--head-only",
        "--init-from",
        tmp_path / "base" / "last.pt",
    )
    assert r.exit_code == 0, r.output
    ckpt = checkpoint.load(tmp_path / "head" / "best.pt")
    assert ckpt.model.alignment_head and ckpt.training.config.head_only
    head = {k for k in ckpt.weights if k.startswith("align_head.")}
    assert head and all(torch.equal(ckpt.weights[k], base[k]) for k in ckpt.weights if k not in head)
    if had_head:
        assert not all(torch.equal(ckpt.weights[k], base[k]) for k in head)
    else:  # a new head, trained from its start (β = 1)
        assert not head & base.keys() and float(ckpt.weights["align_head.beta"]) != 1.0
    logged = [json.loads(line) for line in (tmp_path / "head" / "metrics.jsonl").read_text().splitlines()]
    assert [e["train_align_ce"] for e in logged if "train_align_ce" in e]


@pytest.mark.parametrize(
    "values, given",
    [
        ({"head_only": True, "guided_alignment_weight": 0.5, "alignment_head": True}, set()),
        ({"head_only": True, "guided_alignment_weight": 0.5, "init_from": "m.pt"}, set()),
    ],
    ids=["no-init", "no-head"],
)
def test_head_only_needs_a_model_to_start_from_and_a_head(values, given):
    from nmtkit.cli.train_settings import train_settings

    with pytest.raises(UserError, match="--head-only trains the alignment head of a trained model"):
        train_settings("rnnsearch", "tiny", "appendix-b", values, given | values.keys())


@pytest.mark.parametrize("typed", ["dropout", "weight_drop"])
def test_head_only_refuses_a_dropout_it_would_not_draw(typed):
    """The frozen model draws no mask under --head-only, and the head has none to draw."""
    from nmtkit.cli.train_settings import train_settings

    values = {"head_only": True, "guided_alignment_weight": 0.5, "alignment_head": True, "init_from": "m.pt"}
    with pytest.raises(UserError, match="--head-only trains the head alone, which has no dropout"):
        train_settings("rnnsearch", "tiny", "appendix-b", values | {typed: 0.2}, values.keys() | {typed})
