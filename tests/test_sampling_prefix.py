"""translate --sampling (temperature, top-k, seed) and --prefix (forced first target words), on the
search's own step: in the library on small random models, and from the shell on the overfit one."""

import re

import pytest
import torch
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.translate.sampling import draw, mix, sample, streams
from nmtkit.translate.search import beam_search
from nmtkit.translate.settings import SearchConfig
from tests.conftest import EN
from tests.test_search import model_and_batch, sequence_score

SAMPLING = SearchConfig(sampling=True, nbest=1)


def sampling(**kw):
    return SearchConfig(**{"sampling": True, "nbest": 1, **kw}).check()


def splitmix64(x):
    """The reference mixer, on Python's unbounded ints."""
    m = (1 << 64) - 1
    x &= m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def test_the_draws_hash_is_splitmix64_on_int64_tensors():
    values = [0, 1, 2, 12345, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 0x9E3779B97F4A7C15]
    signed = [v - (1 << 64) if v >> 63 else v for v in values]
    got = mix(torch.tensor(signed, dtype=torch.long)).tolist()
    assert [g % (1 << 64) for g in got] == [splitmix64(v) for v in values]


def test_a_word_of_probability_zero_is_never_drawn_and_top_k_1_is_the_argmax():
    logp = torch.log_softmax(torch.tensor([[0.0, 1.0, 2.0, 0.5, -1.0]] * 4), 1)
    logp[:, 0] = logp[:, 4] = float("-inf")
    u = torch.tensor([0.0, 1e-12, 0.5, 1 - 2**-53], dtype=torch.double)
    assert set(draw(logp, u).tolist()) <= {1, 2, 3}
    assert draw(logp, u).tolist() == sorted(draw(logp, u).tolist(), reverse=True)  # the CDF inverted at 1 - u
    assert draw(logp, u, top_k=1).tolist() == [2] * 4
    assert draw(logp, u, temperature=1e-4).tolist() == [2] * 4


@pytest.mark.parametrize("seed", [2, 9])
def test_top_k_1_and_a_cold_temperature_are_greedy_search(seed):
    model, src, mask = model_and_batch(seed)
    enc = model.encode(src, mask)
    greedy = beam_search(model, enc, SearchConfig(beam=1))
    for cfg in (sampling(top_k=1), sampling(temperature=1e-4), sampling(top_k=1, nbest=3, seed=5)):
        out = sample(model, enc, cfg)
        assert out.tokens == [t for t in greedy.tokens for _ in range(cfg.nbest)]
        assert out.scores == pytest.approx([s for s in greedy.scores for _ in range(cfg.nbest)], abs=1e-4)


def test_a_seed_gives_the_same_samples_and_two_seeds_differ():
    model, src, mask = model_and_batch(3)
    enc = model.encode(src, mask)
    one = sample(model, enc, sampling(nbest=4, seed=1))
    assert sample(model, enc, sampling(nbest=4, seed=1)).tokens == one.tokens
    assert sample(model, enc, sampling(nbest=4, seed=2)).tokens != one.tokens
    assert len({tuple(t) for t in one.tokens}) > 4  # the samples of a sentence differ too


def test_samples_score_their_log_probability_best_first_within_the_limits():
    model, src, mask = model_and_batch(4)
    cfg = sampling(nbest=5, max_ratio=0.5, max_extra=3, temperature=2.0)
    out = sample(model, model.encode(src, mask), cfg)
    for row, (tokens, score) in enumerate(zip(out.tokens, out.scores)):
        i = row // 5
        n = int(mask[i].sum())
        assert 1 <= len(tokens) and len(tokens) + 1 <= n // 2 + 3  # min_len and the limit
        assert score == pytest.approx(sequence_score(model, src[i : i + 1, :n], mask[i : i + 1, :n], tokens), abs=1e-4)
    for first in range(0, len(out.ranking), 5):
        assert out.ranking[first : first + 5] == sorted(out.ranking[first : first + 5], reverse=True)


def test_a_sentence_draws_the_same_samples_alone_as_in_a_batch():
    model, src, mask = model_and_batch(1)
    cfg = sampling(nbest=3, seed=7)
    together = sample(model, model.encode(src, mask), cfg, keys=torch.tensor([10, 11, 12, 13]))
    for i in range(src.shape[0]):
        n = int(mask[i].sum())
        alone = sample(model, model.encode(src[i : i + 1, :n], mask[i : i + 1, :n]), cfg, keys=torch.tensor([10 + i]))
        assert alone.tokens == together.tokens[3 * i : 3 * i + 3]
    assert streams(7, torch.tensor([10, 11]), 3)[3:].tolist() == streams(7, torch.tensor([11]), 3).tolist()


def prefixes(rows):
    """(B, P) ids, <pad> (0) after each row's prefix."""
    width = max(len(r) for r in rows)
    return torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.long)


@pytest.mark.parametrize("beam", [1, 3])
def test_outputs_start_with_their_prefix_of_any_length_and_score_it(beam):
    model, src, mask = model_and_batch(5)
    enc = model.encode(src, mask)
    rows = [[7, 7, 9], [], [12], [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]]
    for out in (
        beam_search(model, enc, SearchConfig(beam=beam, nbest=beam), prefix=prefixes(rows)),
        sample(model, enc, sampling(nbest=2, temperature=1.5), prefix=prefixes(rows)),
    ):
        n_best = out.nbest
        for row, (tokens, score) in enumerate(zip(out.tokens, out.scores)):
            i = row // n_best
            n = int(mask[i].sum())
            if score == float("-inf"):  # the longest prefix, past the output limit,
                assert i == 3 and row % n_best  # leaves room for itself and </s> alone
                continue
            assert tokens[: len(rows[i])] == rows[i]
            assert score == pytest.approx(
                sequence_score(model, src[i : i + 1, :n], mask[i : i + 1, :n], tokens), abs=1e-4
            )
    free = beam_search(model, enc, SearchConfig(beam=beam))
    assert beam_search(model, enc, SearchConfig(beam=beam), prefix=prefixes([[]] * 4)).tokens == free.tokens


def test_a_prefix_that_the_greedy_search_writes_changes_nothing():
    model, src, mask = model_and_batch(6)
    enc = model.encode(src, mask)
    free = beam_search(model, enc, SearchConfig(beam=1))
    rows = [t[:k] for t, k in zip(free.tokens, (0, 1, 2, 5))]
    forced = beam_search(model, enc, SearchConfig(beam=1), prefix=prefixes(rows))
    assert forced.tokens == free.tokens and forced.scores == pytest.approx(free.scores, abs=1e-5)


def test_a_prefix_under_a_shortlist_is_forced_through_its_columns():
    model, src, mask = model_and_batch(8)
    enc = model.encode(src, mask)
    vocab = torch.tensor([0, 1, 2, 3, 5, 9, 11, 14])
    rows = [[9, 14], [5], [], [11, 11, 11]]
    for out in (
        beam_search(model, enc, SearchConfig(beam=3), vocab=vocab, prefix=prefixes(rows)),
        sample(model, enc, SAMPLING, vocab=vocab, prefix=prefixes(rows)),
    ):
        for tokens, start in zip(out.tokens, rows):
            assert tokens[: len(start)] == start and set(tokens) <= set(vocab.tolist())


def test_sampling_settings_are_refused_where_they_mean_nothing():
    from nmtkit.core.errors import UserError

    with pytest.raises(UserError, match="add --sampling"):
        SearchConfig(top_k=5).check()
    with pytest.raises(UserError, match="--coverage-penalty"):
        SearchConfig(sampling=True, coverage_penalty=0.2).check()
    with pytest.raises(UserError, match="--coverage-penalty"):
        SearchConfig(sampling=True).check(typed=["coverage_penalty"])  # typed at its default: idle too
    with pytest.raises(UserError, match="beam search's width"):
        SearchConfig(sampling=True, nbest=8).check(typed=["beam"])
    assert SearchConfig(sampling=True, beam=2, nbest=8).check().width == 8  # samples, not a beam


# From the shell, on the model that learned the six training pairs by heart.


def invoke(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def french(text):
    return re.sub(r" ([:;!?])", r"\1", text)  # Moses' French typography, as test_translate reads it


@pytest.fixture
def src(overfit, tmp_path):
    path = tmp_path / "src.en"
    path.write_text("\n".join(EN[:5]) + "\n", encoding="utf-8")
    return path


def ckpt(overfit):
    return overfit / "run" / "last.pt"


def same_draws(ours: str, theirs: str) -> bool:
    """The same n-best lines: the same words drawn, their scores to the last printed digit but one
    (a batch of one and a batch of five sum in another order, which can move a rounding)."""
    rows = [[line.split(" ||| ") for line in text.splitlines()] for text in (ours, theirs)]
    if [len(row) for row in rows[0]] != [len(row) for row in rows[1]]:
        return False
    for mine, other in zip(*rows, strict=True):
        if mine[:2] != other[:2] or [float(x.removeprefix("F0= ")) for x in mine[2:]] != pytest.approx(
            [float(x.removeprefix("F0= ")) for x in other[2:]], abs=2e-4
        ):
            return False
    return True


def test_sampling_from_the_shell(overfit, src):
    greedy = invoke("translate", "-m", ckpt(overfit), src, "--beam", 1)
    top1 = invoke("translate", "-m", ckpt(overfit), src, "--sampling", "--top-k", 1)
    assert top1.exit_code == 0, top1.output
    assert top1.stdout == greedy.stdout
    warm = ["--sampling", "--temperature", 3, "--nbest", 4, "--device", "cpu"]  # scores to the printed digit
    a = invoke("translate", "-m", ckpt(overfit), src, *warm, "--seed", 1)
    assert a.exit_code == 0, a.output
    assert len(a.stdout.splitlines()) == 20 and a.stdout.startswith("0 ||| ")
    again = invoke("translate", "-m", ckpt(overfit), src, *warm, "--seed", 1, "--batch-size", 1)
    assert same_draws(again.stdout, a.stdout)  # batching changes no draw
    piped = invoke("translate", "-m", ckpt(overfit), *warm, "--seed", 1, input=src.read_text(encoding="utf-8"))
    assert piped.stdout == a.stdout
    assert invoke("translate", "-m", ckpt(overfit), src, *warm, "--seed", 2).stdout != a.stdout
    # --seed was taken without a word, and drew nothing; one typed at its default changes nothing too
    for idle in (["--top-k", 3], ["--seed", 7], ["--temperature", 1], ["--top-k", 0]):
        r = invoke("translate", "-m", ckpt(overfit), src, *idle)
        assert r.exit_code == 2 and "add --sampling" in r.output, (idle, r.output)
    r = invoke("translate", "-m", ckpt(overfit), src, "--sampling", "--temperature", 0)
    assert r.exit_code == 2
    # likewise a length penalty's exponent without the penalty that reads it
    for penalty, alpha in (("none", 0.9), ("average", 0.9), ("average", 0.6)):  # 0.6: the default, typed
        r = invoke("translate", "-m", ckpt(overfit), src, "--alpha", alpha, "--length-penalty", penalty)
        assert (
            r.exit_code == 2
            and f"--alpha is the exponent of --length-penalty power and gnmt, not {penalty}" in r.output
        )
    assert invoke("translate", "-m", ckpt(overfit), src, "--alpha", 0.9, "--length-penalty", "gnmt").exit_code == 0
    # a config file's idle options, as --dump-config writes them in comments and a user uncomments them
    src.with_name("idle.yaml").write_text("alpha: 0.6\ntemperature: 1.0\n", encoding="utf-8")
    assert invoke("translate", "-m", ckpt(overfit), src, "--config", src.with_name("idle.yaml")).exit_code == 0


def test_a_prefix_from_the_shell_with_a_beam_and_a_batch(overfit, src, tmp_path):
    starts = ["Dieu", "", "La lumière", "Dieu vit que la terre", "Et la"]
    (tmp_path / "prefix.fr").write_text("\n".join(starts) + "\n", encoding="utf-8")
    for extra in (["--beam", 3], ["--sampling", "--temperature", 2], ["--beam", 3, "--shortlist"]):
        r = invoke("translate", "-m", ckpt(overfit), src, "--nbest", 2, "--prefix", tmp_path / "prefix.fr", *extra)
        assert r.exit_code == 0, r.output
        rows = [line.split(" ||| ") for line in r.stdout.splitlines()]
        assert len(rows) == 10
        for fields in rows:
            assert fields[1].startswith(starts[int(fields[0])])
        if "--sampling" not in extra:  # the empty prefix forces nothing
            free = invoke("translate", "-m", ckpt(overfit), src, *extra).stdout.splitlines()
            assert rows[2][1] == free[1]


def test_the_free_outputs_first_words_as_prefix_give_the_free_output(overfit, src, tmp_path):
    free = invoke("translate", "-m", ckpt(overfit), src, "--beam", 4, "--tokenized").stdout.splitlines()
    (tmp_path / "p").write_text(
        "\n".join(" ".join(line.split()[:k]) for k, line in enumerate(free)) + "\n", encoding="utf-8"
    )
    forced = invoke("translate", "-m", ckpt(overfit), src, "--beam", 4, "--tokenized", "--prefix", tmp_path / "p")
    assert forced.exit_code == 0, forced.output
    assert forced.stdout.splitlines() == free


def test_a_prefix_file_of_another_length_is_one_line_and_exit_2(overfit, src, tmp_path):
    (tmp_path / "short").write_text("Dieu\n\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt(overfit), src, "--prefix", tmp_path / "short", "-o", tmp_path / "out")
    assert r.exit_code == 2 and "has 2 lines but" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    r = invoke(
        "translate",
        "-m",
        ckpt(overfit),
        "--prefix",
        tmp_path / "short",
        "-o",
        tmp_path / "out",
        input=src.read_text(encoding="utf-8"),
    )
    assert r.exit_code == 2 and f"--prefix {tmp_path / 'short'} has " in r.output and ", the input more" in r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_sampling_and_prefix_from_a_config_file(overfit, src, tmp_path):
    (tmp_path / "prefix.fr").write_text("Dieu\n\nLa\n\n\n", encoding="utf-8")
    (tmp_path / "bt.toml").write_text(
        f'sampling = true\ntop-k = 1\nseed = 3\nprefix = "{tmp_path / "prefix.fr"}"\n', encoding="utf-8"
    )
    by_file = invoke("translate", "-m", ckpt(overfit), src, "--config", tmp_path / "bt.toml")
    by_flags = invoke(
        "translate",
        "-m",
        ckpt(overfit),
        src,
        "--sampling",
        "--top-k",
        1,
        "--seed",
        3,
        "--prefix",
        tmp_path / "prefix.fr",
    )
    assert by_file.exit_code == 0, by_file.output
    assert by_file.stdout == by_flags.stdout and french(by_file.stdout.splitlines()[0]).startswith("Dieu")
    dumped = invoke("translate", "-m", ckpt(overfit), src, "--config", tmp_path / "bt.toml", "--dump-config", "-")
    assert "\nsampling: true\n" in dumped.stdout and "\ntop-k: 1\n" in dumped.stdout
    assert "\n# temperature: 1.0\n" in dumped.stdout and "prefix.fr" in dumped.stdout


def test_a_prefix_with_a_word_out_of_the_vocabulary_says_so(overfit, src, tmp_path):
    (tmp_path / "p").write_text("Dieu xylophone\n\n\n\n\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt(overfit), src, "--prefix", tmp_path / "p", "--tokenized")
    assert r.exit_code == 0, r.output
    assert "line 1: --prefix has a word out of the vocabulary: the output holds <unk> there" in r.stderr
    assert r.stdout.splitlines()[0].startswith("Dieu <unk>")
    r = invoke("translate", "-m", ckpt(overfit), src, "--prefix", tmp_path / "p", "--tokenized", "--no-unk")
    assert r.exit_code == 0, r.output
    assert (
        "line 1: --prefix has a word out of the vocabulary, which --no-unk bans; forcing only what comes before it"
        in r.stderr
    )
    first = r.stdout.splitlines()[0]
    assert first.startswith("Dieu ") and "<unk>" not in first


@pytest.mark.parametrize("units", [["Du", "X@@", "ylo@@", "phoneq", "et"], ["▁Du", "▁X", "ylo", "phoneq", "▁et"]])
def test_a_prefix_word_with_a_unit_out_of_the_vocabulary_is_forced_as_one_unk(units):
    """Its units in the vocabulary had been forced as a word of their own (``<unk> ylophoneq``)."""
    from nmtkit.data.vocab import UNK
    from nmtkit.translate.prefixes import _one_unk_a_word

    assert _one_unk_a_word(units, [5, UNK, 6, 7, 8]) == [5, UNK, 8]
    assert _one_unk_a_word(units, [5, 9, 6, UNK, 8]) == [5, UNK, 8]
    assert _one_unk_a_word(units, [5, 9, 6, 7, 8]) == [5, 9, 6, 7, 8]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--beam", 12], "--beam is beam search's width"),  # typed at its default
        (["--beam", 7], "--beam is beam search's width"),
        (["--coverage-penalty", 0], "--coverage-penalty ranks beam search's hypotheses"),
    ],
)
def test_what_only_beam_search_reads_is_refused_beside_sampling(overfit, src, extra, says):
    r = invoke("translate", "-m", ckpt(overfit), src, "--sampling", *extra)
    assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_a_prefix_is_cut_before_a_special_symbol_no_output_can_hold():
    """A word-level target read ``<s>`` in a --tokenized prefix as the start symbol, which the search
    then could never emit: it returned no output, and the sampler ignored the prefix."""
    from types import SimpleNamespace

    from nmtkit.data.vocab import SPECIALS
    from nmtkit.translate.prefixes import prefix_ids

    words = [*SPECIALS, "Dieu", "la"]
    side = SimpleNamespace(
        tokens=lambda line, _tokenized: line.split(), ids=lambda units: [words.index(u) for u in units]
    )
    options, said = SimpleNamespace(tokenized=True, search=SearchConfig()), []
    got = prefix_ids(["Dieu <s> la", "la </s>", "Dieu la"], side, options, False, 1, said.append)
    assert got == [[4], [5], [4, 5]]
    assert said == [
        "line 1: --prefix holds <s>, which no output can: forcing only what comes before it",
        "line 2: --prefix holds </s>, which no output can: forcing only what comes before it",
    ]


def test_a_prefix_word_next_to_an_unknown_one_in_sentencepiece_units_is_kept():
    from nmtkit.data.vocab import UNK
    from nmtkit.translate.prefixes import _one_unk_a_word

    assert _one_unk_a_word(["▁Dieu", "<unk>", "▁la"], [10, UNK, 11]) == [10, UNK, 11]


def test_a_config_files_search_setting_can_be_undone_on_the_command_line_beside_sampling(overfit, src, tmp_path):
    (tmp_path / "c.yaml").write_text("coverage-penalty: 0.2\nbeam: 5\n", encoding="utf-8")
    r = invoke("translate", "-m", ckpt(overfit), src, "--config", tmp_path / "c.yaml", "--sampling")
    assert r.exit_code == 2 and "--coverage-penalty ranks" in r.output  # the file's penalty: idle
    r = invoke(
        "translate", "-m", ckpt(overfit), src, "--config", tmp_path / "c.yaml", "--sampling", "--coverage-penalty", 0
    )
    assert r.exit_code == 0, r.output  # undone; the file's beam, written for beam search, unused
