"""A split given with its language's suffix (`--valid raw/dev.fr` for `raw/dev`) is named as a
prefix given wrong, in one line with exit status 2, not as a missing `raw/dev.fr.en`."""

from click.testing import CliRunner

from nmtkit.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def one_error_line(result, *words):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_a_prefix_with_its_language_is_named(raw, corpus, tmp_path):
    dev = raw / "valid"
    r = run(
        "preprocess", "-s", "fr", "-t", "en", "--train", raw / "train", "--valid", f"{dev}.fr", "-d", tmp_path / "c2"
    )
    one_error_line(r, f"{dev}.fr is a file: give the prefix {dev},", f"reads {dev}.fr and {dev}.en")
    assert not (tmp_path / "c2").exists()
    clean = tmp_path / "clean"
    r = run("build-vocab", "-s", "en", "-t", "fr", "--train", f"{clean}/train.en", "-d", tmp_path / "v2")
    one_error_line(r, f"give the prefix {clean}/train,")
    args = [
        "-s",
        "en",
        "-t",
        "fr",
        "--train",
        f"{clean}/train.fr",
        "--vocab",
        tmp_path / "vocab",
        "-d",
        tmp_path / "b2",
    ]
    one_error_line(run("preprocess", *args), f"give the prefix {clean}/train,")


def test_a_missing_prefix_is_still_a_missing_file(raw, tmp_path):
    r = run("preprocess", "-s", "en", "-t", "fr", "--train", raw / "nothere", "-d", tmp_path / "c2")
    one_error_line(r, f"{raw}/nothere.en: no such file")
    assert "is a file" not in r.stderr
