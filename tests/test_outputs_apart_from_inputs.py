"""An output never replaces an input, and options that cannot go together are refused, in one line
with status 2: what a user-error audit of every command found exiting 0 over its own inputs, or
with a traceback."""

import shutil
from dataclasses import replace

import pytest
from click.testing import CliRunner

from nmtkit import checkpoint
from nmtkit.cli import main
from tests.conftest import EN, FR, TINY_ADAM


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(r, said):
    assert r.exit_code == 2 and said in r.output and r.output.count("\n") == 1, r.output


def test_align_lexicon_and_word_align_refuse_to_write_over_what_they_read(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    source, target = tmp_path / "s.en", tmp_path / "s.fr"
    source.write_text(EN[0] + "\n", encoding="utf-8")
    target.write_text(FR[0] + "\n", encoding="utf-8")
    kept = {path: path.read_bytes() for path in (source, target, model)}
    pair = ["-m", model, "--source", source, "--target", target]
    for output, said in ((target, "the same file as --target"), (source, "as --source"), (model, "as -m")):
        refused(invoke("align", *pair, "-o", output), said)
    # a file of the corpus lexicon reads (the data-bin stands for each file in it)
    data = tmp_path / "bin"
    shutil.copytree(overfit / "bin-kept", data)
    inside = next(data.glob("train.*.bin"))
    kept[inside] = inside.read_bytes()
    refused(invoke("lexicon", model, "--data", data, "-o", inside), f"the same file as --data {inside}")
    # a run's own names given to another of its models: last.pt's resume state was replaced by weights alone
    run = tmp_path / "run"
    shutil.copytree(overfit / "run", run)
    for name in ("last.pt", "best-9.pt", "update-3.pt"):
        before = (run / name).read_bytes() if (run / name).exists() else None
        refused(invoke("lexicon", run / "best.pt", "--data", data, "-o", run / name), "a name train writes in its run")
        assert ((run / name).read_bytes() if (run / name).exists() else None) == before
    # a checkpoint missing is said so, given in place or not (a traceback of the check before)
    refused(invoke("lexicon", run / "none.pt", "--data", data, "-o", run / "last.pt"), "none.pt: no such checkpoint")
    (run / "best.pt").unlink()  # a run stopped before its first validation
    refused(invoke("lexicon", run / "best.pt", "--data", data), "best.pt: no such checkpoint")
    done = invoke("lexicon", run / "last.pt", "--data", data)  # in place, as the help's example: its state kept
    assert done.exit_code == 0 and checkpoint.load(run / "last.pt").training.resumable, done.output
    # word-align's links over a side of the corpus, or over preprocess's line map
    for suffix in ("en", "lines"):
        refused(
            invoke("word-align", "-s", "en", "-t", "fr", "--train", tmp_path / "s", "--align-suffix", suffix), "--train"
        )
    (tmp_path / "s.links").mkdir()  # refused after eflomal's minutes, at the write
    refused(
        invoke("word-align", "-s", "en", "-t", "fr", "--train", tmp_path / "s", "--align-suffix", "links"),
        "s.links: is a directory, where the links would be written: give another --align-suffix",
    )
    assert {path: path.read_bytes() for path in kept} == kept


def test_options_that_cannot_go_together(overfit, tmp_path):
    model = overfit / "run" / "last.pt"
    source = tmp_path / "s.en"
    source.write_text(EN[0] + "\n", encoding="utf-8")
    # torch's int8 layers compute from float32: under bfloat16 autocast it was a traceback
    refused(invoke("translate", "-m", model, source, "--int8", "--bf16"), "--int8 and --bf16: give one of them")
    refused(invoke("translate", "-m", model, source, "--replace-unk", "--no-unk"), "which --no-unk never gives")
    # a vocabulary given as BPE codes segmented every word into letters, with status 0
    vocab = tmp_path / "vocab.en.txt"
    vocab.write_text("<pad> 0\n<unk> 0\nthe 120\nGod 37\n", encoding="utf-8")
    refused(invoke("tokenize", "-l", "en", source, "--bpe-codes", vocab), "a vocabulary ('unit count' lines)")
    refused(invoke("translate", "-m", model, source, "--threads", 99999), "--threads")


def test_a_run_is_not_saved_among_a_corpus_s_files_and_reverse_says_a_missing_text(corpus, tmp_path):
    refused(
        invoke("train", corpus, "--save-dir", corpus, *TINY_ADAM, "--max-updates", 1), "a binarized corpus is there"
    )
    assert not (corpus / "last.pt").exists()
    gone = next(corpus.glob("valid.*.ref"))
    gone.unlink()
    refused(invoke("reverse", corpus, tmp_path / "reversed"), f"{gone}: missing, where the manifest names it")
    assert not (tmp_path / "reversed").exists()


@pytest.mark.parametrize("command", ["score", "align-plot"])
def test_a_model_of_the_other_direction_is_named_so_not_an_ensemble_of_other_vocabularies(overfit, tmp_path, command):
    from nmtkit import checkpoint

    model = overfit / "run" / "last.pt"
    other = checkpoint.load(model)
    other.text = replace(other.text, langs={"src": "fr", "tgt": "en"})
    checkpoint.save(tmp_path / "fr-en.pt", other)
    source, target = tmp_path / "s.en", tmp_path / "s.fr"
    source.write_text(EN[0] + "\n", encoding="utf-8")
    target.write_text(FR[0] + "\n", encoding="utf-8")
    models = ["-m", model, "-m", tmp_path / "fr-en.pt"]
    if command == "score":
        r = invoke("score", target, "-r", target, "--source", source, *models)
    else:
        r = invoke("align-plot", *models, "--source", source, "--target", target, "-n", 1, "-o", tmp_path / "a.png")
    assert r.exit_code == 2 and "translates fr→en but" in r.output, r.output


def test_a_corpus_is_not_binarized_into_its_vocabulary_or_its_clean_text(corpus, tmp_path):
    clean, vocab = tmp_path / "clean", tmp_path / "vocab"
    kept = {path: path.read_bytes() for path in [*clean.iterdir(), *vocab.iterdir()]}
    common = ["preprocess", "-s", "en", "-t", "fr", "--train", clean / "train", "--valid", clean / "valid"]
    refused(invoke(*common, "--vocab", vocab, "-d", vocab), f"-d {vocab}: the directory of --vocab")
    refused(invoke(*common, "--vocab", vocab, "-d", clean), f"-d {clean}: the directory of --train")
    assert {path: path.read_bytes() for path in [*clean.iterdir(), *vocab.iterdir()]} == kept


def test_no_command_writes_its_directory_into_another_s_or_an_input_s(raw, corpus, tmp_path):
    """build-vocab -d a data-bin wrote its vocabularies over the corpus's (its fingerprints then
    failed); preprocess --vocab -d a copy of a vocabulary directory left that vocab.json describing
    other vocabularies; preprocess -d the raw text's directory put clean train.* over raw files it
    had not read."""
    import shutil

    clean, vocab, data = tmp_path / "clean", tmp_path / "vocab", corpus
    shutil.copytree(vocab, tmp_path / "vocab-copy")
    shutil.copytree(raw, tmp_path / "raw-copy")
    watched = [clean, vocab, data, tmp_path / "vocab-copy", tmp_path / "raw-copy"]
    kept = {path: path.read_bytes() for d in watched for path in d.iterdir()}
    langs = ["-s", "en", "-t", "fr"]
    refused(
        invoke("build-vocab", *langs, "--train", clean / "train", "-d", data),
        f"-d {data}: holds the outputs of 'nmtkit preprocess --vocab' (manifest.json), which the vocabularies",
    )
    refused(
        invoke("preprocess", *langs, "--train", clean / "train", "--vocab", vocab, "-d", tmp_path / "vocab-copy"),
        "holds the outputs of 'nmtkit build-vocab' (vocab.json), which the corpus would replace",
    )
    refused(
        invoke("preprocess", *langs, "--train", tmp_path / "raw-copy" / "test", "-d", tmp_path / "raw-copy"),
        f"-d {tmp_path / 'raw-copy'}: the directory of --train {tmp_path / 'raw-copy' / 'test'}",
    )
    refused(invoke("preprocess", *langs, "--train", raw / "train", "-d", data), "(manifest.json), which the clean")
    assert {path: path.read_bytes() for d in watched for path in d.iterdir()} == kept


def test_score_of_a_split_refuses_the_options_of_hypotheses(overfit):
    model, data = overfit / "run" / "last.pt", overfit / "bin-kept"
    assert invoke("score", "-m", model, "--data", data).exit_code == 0
    for extra in (["--by-length"], ["--source", data / "valid.en.ref"], ["--bootstrap", 100], ["--sentence-level"]):
        refused(invoke("score", "-m", model, "--data", data, *extra), f"--{extra[0].lstrip('-')} needs hypotheses")


def test_align_plot_warns_of_files_named_as_the_other_language(overfit, tmp_path):
    (tmp_path / "s.fr").write_text(EN[0] + "\n", encoding="utf-8")  # the files swapped: named for the other side
    (tmp_path / "s.en").write_text(FR[0] + "\n", encoding="utf-8")
    model = overfit / "run" / "last.pt"
    args = ["-m", model, "--source", tmp_path / "s.fr", "--target", tmp_path / "s.en", "-n", 1]
    r = invoke("align-plot", *args, "-o", tmp_path / "a.png")
    assert r.exit_code == 0 and r.output.count("is named as") == 2, r.output


def test_an_alignment_file_without_sentences_says_so(tmp_path):
    import json

    from nmtkit.align.files import ALIGNMENT_FORMAT

    (tmp_path / "a.json").write_text(json.dumps({"format": ALIGNMENT_FORMAT}) + "\n", encoding="utf-8")
    refused(invoke("align-plot", tmp_path / "a.json", "-n", 1, "-o", tmp_path / "a.png"), "it holds no sentence")


def test_a_files_name_that_ends_in_a_slash_or_is_empty_is_refused(overfit, tmp_path, monkeypatch):
    """``-o out/`` wrote a file named out, and ``-o ''`` wrote to stdout: both exited 0."""
    monkeypatch.chdir(tmp_path)
    model = overfit / "run" / "last.pt"
    (tmp_path / "s.en").write_text(EN[0] + "\n", encoding="utf-8")
    for args in (
        ["translate", "-m", model, "s.en", "-o"],
        ["translate", "-m", model, "s.en", "--alignments"],
        ["average", model, model, "-o"],
        ["rerank", "s.en", "-o"],
    ):
        refused(invoke(*args, "out/"), "'out/' names a directory: give a file's name")
        refused(invoke(*args, ""), "'' names nothing: give a file's name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.en"]
    # the directory that refused is named, not the first of those to be made
    refused(invoke("translate", "-m", model, "s.en", "-o", "/proc/nope/deeper/x"), "cannot be written in /proc (")


def test_a_directory_s_empty_name_is_refused(corpus, tmp_path, monkeypatch):
    """``--save-dir "$RUN"`` with RUN unset trained into the working directory, its checkpoints
    and log among the user's files, and exited 0."""
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    for args in (
        ["train", corpus, "--max-updates", "1", "--save-dir", ""],
        ["train", corpus, "--save-dir", "run", "--max-updates", "1", "--tensorboard", ""],
        ["train", "", "--save-dir", "run"],
        ["preprocess", "-s", "en", "-t", "fr", "--train", "x", "-d", ""],
        ["reverse", corpus, ""],
    ):
        refused(invoke(*args), "'' names nothing: give a directory's name ('.' for this one)")
    for args in (  # '-', a file's stdin or stdout, made a directory so named
        ["preprocess", "-s", "en", "-t", "fr", "--train", "x", "-d", "-"],
        ["train", corpus, "--max-updates", "1", "--save-dir", "-"],
    ):
        refused(invoke(*args), "'-' is no directory (stdin and stdout are a file's): './-' names one so called")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_run_s_directory_given_for_a_checkpoint_names_its_checkpoints(overfit, tmp_path):
    """``translate -m runs/x`` got click's "File 'runs/x' is a directory", where ``info runs/x`` reads it."""
    run = overfit / "run"
    (tmp_path / "s.en").write_text(EN[0] + "\n", encoding="utf-8")
    said = f"'{run}' is a run's directory: give a checkpoint in it, {run / 'best.pt'} or {run / 'last.pt'}"
    refused(invoke("translate", "-m", run, tmp_path / "s.en"), said)
    refused(invoke("score", tmp_path / "s.en", "-r", tmp_path / "s.en", "-m", run, "--source", tmp_path / "s.en"), said)
    refused(invoke("lexicon", run, "--data", tmp_path), said)
    refused(invoke("translate", "-m", tmp_path, tmp_path / "s.en"), "is a directory")  # no checkpoint in it
    # as a shell completes it, with a '/'
    refused(
        invoke("translate", "-m", f"{run}/", tmp_path / "s.en"), f"'{run}/' is a run's directory: give a checkpoint"
    )
