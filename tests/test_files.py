"""Strict reading, parallel checks and atomic outputs."""

import errno
import os
import subprocess
import sys
from unittest import mock

import pytest

from nmtkit.core.errors import UserError
from nmtkit.core.files import atomic_write, read_lines
from nmtkit.core.line_counts import check_parallel, count_lines
from nmtkit.core.staging import Staging


def test_read_lines_names_bad_utf8_line(tmp_path):
    f = tmp_path / "x.en"
    f.write_bytes(b"ok\nfine\nbad \xff here\n")
    with pytest.raises(UserError, match=r"x.en: line 3 is not valid UTF-8 \(byte 0xff"):
        list(read_lines(f))


def test_read_lines_missing_and_empty(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        list(read_lines(tmp_path / "nope"))
    (tmp_path / "e").write_text("")
    with pytest.raises(UserError, match="is empty"):
        list(read_lines(tmp_path / "e"))
    assert list(read_lines(tmp_path / "e", allow_empty=True)) == []
    (tmp_path / "mark").write_bytes(b"\xef\xbb\xbf")  # a byte order mark alone: empty too (was one empty line)
    with pytest.raises(UserError, match="mark: is empty"):
        list(read_lines(tmp_path / "mark"))
    assert list(read_lines(tmp_path / "mark", allow_empty=True)) == []
    (tmp_path / "line").write_bytes(b"\xef\xbb\xbf\n")  # the mark and a newline: one empty line
    assert list(read_lines(tmp_path / "line")) == [""]


def test_a_gzipped_corpus_is_named_as_such(tmp_path):
    """A .gz beside the missing file, or given itself, is named with the zcat that makes the text."""
    import gzip

    (tmp_path / "train.fr.gz").write_bytes(gzip.compress(b"Au commencement\n"))
    with pytest.raises(UserError, match=r"train.fr: no such file \(.*train.fr.gz is there: zcat"):
        list(read_lines(tmp_path / "train.fr"))
    with pytest.raises(UserError, match=r"train.fr.gz: gzip-compressed; nmtkit reads plain UTF-8 text"):
        count_lines(tmp_path / "train.fr.gz")


def test_a_utf16_corpus_is_named_as_such_with_or_without_its_mark(tmp_path):
    """It was counted as lines without a partner, or, without a byte-order mark, passed for UTF-8 and
    came out with its NULs cleaned away."""
    english = "In the beginning God created the heaven and the earth.\nAnd the earth was without form.\n"
    russian = "В начале сотворил Бог небо и землю.\n"  # a NUL for each space and newline alone
    for text in (english, russian, "Привет мир\n"):
        for encoding, named in (("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE")):
            (tmp_path / "train.en").write_bytes(text.encode(encoding))  # without a mark, iconv needs the order
            for read in (count_lines, lambda p: list(read_lines(p))):
                with pytest.raises(UserError, match=rf"train.en: UTF-16 text; nmtkit reads UTF-8 \(iconv -f {named} "):
                    read(tmp_path / "train.en")
    strays = (b"a stray \x00 in crawled text\n" * 30, b"a\x00b\n", b"ab\x00\x00c\n")  # the cleaning's
    # NULs at one parity, each beside a newline: read as UTF-16 before
    strays += (b"A\n\x00\nB\n\x00\n", b"And God\x00 said.\nAmen.\n\x00\n")
    for stray in strays:
        (tmp_path / "crawled.en").write_bytes(stray)
        assert list(read_lines(tmp_path / "crawled.en")) == stray.decode().splitlines()


def test_a_file_whose_lines_end_in_cr_alone_is_named_as_such(tmp_path):
    """An old Mac's line ends: read as one line, a corpus of 100 pairs was 'every pair of its 1
    lines was filtered out', a test set one sentence."""
    (tmp_path / "mac.en").write_bytes(b"the cat\rthe dog\r" * 50)
    for read in (count_lines, lambda p: list(read_lines(p))):
        with pytest.raises(UserError, match=r"mac.en: its lines end in CR alone .* \(tr '\\r' '\\n' < "):
            read(tmp_path / "mac.en")
    for fine in (b"a\rb\nc\r\n", b"one line with a \r in it", b"x" * 5000 + b"\r\r"):  # CRs the cleaning takes
        (tmp_path / "fine.en").write_bytes(fine)
        assert len(list(read_lines(tmp_path / "fine.en"))) == fine.count(b"\n") + (not fine.endswith(b"\n"))


def test_read_lines_keeps_empty_lines_and_strips_crlf(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"a\r\n\nb")
    assert list(read_lines(f)) == ["a", "", "b"]
    assert count_lines(f) == 3


def test_the_first_line_s_byte_order_mark_is_no_text(tmp_path):
    """A Windows editor's UTF-8 mark had been read into the first word: a hypothesis file with one
    scored below 100 BLEU against itself without it, the mark part of a word no reference held."""
    from click.testing import CliRunner

    from nmtkit.cli import main

    (tmp_path / "ref.fr").write_text("Au commencement Dieu créa les cieux et la terre .\nEt la terre\n")
    (tmp_path / "hyp.fr").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "ref.fr").read_bytes())
    assert list(read_lines(tmp_path / "hyp.fr")) == list(read_lines(tmp_path / "ref.fr"))
    r = CliRunner().invoke(main, ["score", str(tmp_path / "hyp.fr"), "-r", str(tmp_path / "ref.fr"), "--json"])
    assert r.exit_code == 0 and '"bleu": 100.0' in r.stdout, r.output
    (tmp_path / "mid").write_bytes(b"a\n\xef\xbb\xbfb\n")  # a mark within the text is the text's
    assert list(read_lines(tmp_path / "mid")) == ["a", "\ufeffb"]
    (tmp_path / "bad").write_bytes(b"\xef\xbb\xbfcaf\xe9\n")  # the offset counts the mark: 0xe9 is byte 6
    with pytest.raises(UserError, match=r"line 1 is not valid UTF-8 \(byte 0xe9 at byte offset 6\)"):
        list(read_lines(tmp_path / "bad"))


def test_check_parallel_names_unpartnered_lines(tmp_path):
    (tmp_path / "a").write_text("1\n2\n3\n4\n")
    (tmp_path / "b").write_text("1\n2\n")
    with pytest.raises(UserError, match=r"a has 4 lines, .*b has 2 lines\): lines 3-4 have no partner"):
        check_parallel([tmp_path / "a", tmp_path / "b"])
    (tmp_path / "b").write_text("1\n2\n3\n")
    with pytest.raises(UserError, match=r"b has 3 lines\): line 4 has no partner"):  # not 'lines 4-4'
        check_parallel([tmp_path / "a", tmp_path / "b"])
    (tmp_path / "b").write_text("1\n")
    with pytest.raises(UserError, match=r"b has 1 line\): lines 2-4 have no partner"):  # not '1 lines'
        check_parallel([tmp_path / "a", tmp_path / "b"])


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write("half")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_atomic_write_refuses_a_directory_before_the_work(tmp_path):
    """The rename's IsADirectoryError named the hidden temporary file, after the work."""
    with pytest.raises(UserError, match=f"{tmp_path}: is a directory: give a file's name"):
        with atomic_write(tmp_path, "wb"):
            raise AssertionError("not reached")
    assert os.listdir(tmp_path) == []


def test_a_failed_output_takes_the_directories_it_made_with_it(tmp_path):
    """`-o new/sub/out.txt` makes its directories as mkdir -p would; a command that then failed
    (bad UTF-8 on line 2, Ctrl-C) left them behind, empty. Those that held something stay."""
    for make in (
        lambda: atomic_write(tmp_path / "new" / "sub" / "out.txt"),
        lambda: Staging(tmp_path / "new" / "sub" / "dir"),
    ):
        with pytest.raises(RuntimeError), make():
            raise RuntimeError("the command failed")
        assert list(tmp_path.iterdir()) == []
    (tmp_path / "new").mkdir()
    with pytest.raises(RuntimeError), atomic_write(tmp_path / "new" / "sub" / "out.txt"):
        (tmp_path / "new" / "sub" / "another's.txt").write_text("x")  # written meanwhile
        raise RuntimeError("the command failed")
    assert [p.name for p in (tmp_path / "new" / "sub").iterdir()] == ["another's.txt"]
    with atomic_write(tmp_path / "made" / "out.txt") as fh:
        fh.write("whole")
    assert (tmp_path / "made" / "out.txt").read_text() == "whole"
    # failed while making them: a name too long, under directories just made
    for make in (
        lambda: atomic_write(tmp_path / "fresh" / "sub" / ("x" * 256)),
        lambda: Staging(tmp_path / "fresh" / "sub" / ("y" * 256)),
    ):
        with pytest.raises(UserError, match="file name too long"), make():
            pass
        assert not (tmp_path / "fresh").exists()
    (tmp_path / "b").mkdir()  # a/../b is b, the user's: never counted as made
    with pytest.raises(RuntimeError), atomic_write(tmp_path / "a" / ".." / "b" / "out.txt"):
        raise RuntimeError("the command failed")
    assert (tmp_path / "b").is_dir() and not (tmp_path / "a").exists()


def test_a_full_disk_is_said_of_the_output_that_met_it():
    """The system names no file: with several outputs open, the last one opened was named."""
    with pytest.raises(OSError) as err:
        with atomic_write("/dev/full") as full, atomic_write(os.devnull) as other:
            full.write("x" * 100_000)  # past the buffer: written here, in the command's own lines
            other.write("y")
    assert err.value.filename == "/dev/full" and err.value.errno == errno.ENOSPC


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_staging_commits_a_whole_directory_or_nothing(tmp_path):
    dest = tmp_path / "d"
    with pytest.raises(RuntimeError):
        with Staging(dest) as st:
            st.path("a").write_text("x")
            raise RuntimeError
    assert not dest.exists() and list(tmp_path.iterdir()) == []
    with Staging(dest) as st:
        st.path("a").write_text("x")
        assert not dest.exists()  # nothing shows before the commit
        st.commit()
    assert sorted(p.name for p in dest.iterdir()) == ["a"]
    (dest / "mine.txt").write_text("the user's")
    (dest / ".staging-abc").mkdir()  # a leftover of the old in-place scheme
    with Staging(dest) as st:
        st.path("a").write_text("y")
        st.path("b").write_text("z")
        st.commit()
    assert {p.name: p.read_text() for p in dest.iterdir()} == {"a": "y", "b": "z", "mine.txt": "the user's"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_staging_of_dead_processes_is_removed_and_a_torn_commit_repaired(tmp_path):
    from nmtkit.core.temporaries import HOST as _HOST

    dest, pid = tmp_path / "d", dead_pid()
    stale = tmp_path / f".d.staging-{_HOST}-{pid}-x1"
    stale.mkdir()
    (stale / "half").write_text("half written")
    mine = tmp_path / f".d.staging-{_HOST}-{os.getpid()}-x2"  # a live process's: kept
    mine.mkdir()
    torn = tmp_path / f".d.old-{_HOST}-{pid}-x3"  # killed between the two renames
    (torn / "dir").mkdir(parents=True)
    (torn / "dir" / "a").write_text("old")
    with Staging(dest) as st:
        assert not stale.exists() and mine.exists() and not torn.exists()
        assert (dest / "a").read_text() == "old"  # put back before anything else
        st.path("b").write_text("new")
        st.commit()
    assert sorted(p.name for p in dest.iterdir()) == ["a", "b"]


def _written_under(umask, files, directory):
    """``files`` written over by atomic_write, and ``directory`` replaced by a Staging, under ``umask``."""
    old = os.umask(umask)
    try:
        for path in files:
            with atomic_write(path) as fh:
                fh.write("new")
        with Staging(directory) as st:
            st.path("a").write_text("x")
            st.commit()
    finally:
        os.umask(old)


def test_outputs_follow_the_umask(tmp_path):
    _written_under(0o027, [tmp_path / "f"], tmp_path / "d")
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o750


def test_a_replaced_output_keeps_the_permissions_it_had(tmp_path):
    """rerank -o and lexicon in place made a chmod 600 file 644 again: the new file took the umask's."""
    (tmp_path / "f").write_text("old")
    (tmp_path / "f").chmod(0o600)
    (tmp_path / "g").write_text("old")
    (tmp_path / "g").chmod(0o755)
    (tmp_path / "d").mkdir(mode=0o700)
    _written_under(0o022, [tmp_path / "f", tmp_path / "g"], tmp_path / "d")
    assert [(tmp_path / n).stat().st_mode & 0o777 for n in ("f", "g", "d")] == [0o600, 0o755, 0o700]
    assert (tmp_path / "f").read_text() == "new" and (tmp_path / "d" / "a").exists()
    # never setuid carried over; and another user's file is replaced by one of ours: the umask's then
    (tmp_path / "f").chmod(0o4755)
    with atomic_write(tmp_path / "f") as fh:
        fh.write("newer")
    assert (tmp_path / "f").stat().st_mode & 0o7777 == 0o755
    from nmtkit.core.files import kept_mode

    mine = os.stat(tmp_path / "f")
    theirs = os.stat_result((0o100660, *mine[1:4], mine.st_uid + 1, *mine[5:]))
    old = os.umask(0o022)
    try:
        with mock.patch("os.stat", return_value=theirs):
            assert kept_mode(tmp_path / "f", 0o666) == 0o644
    finally:
        os.umask(old)


def test_atomic_write_writes_through_a_link_and_into_what_is_no_regular_file(tmp_path):
    """A rename over the path would have put a file in place of a link, a FIFO or /dev/stdout
    (as root, /dev/stdout and /dev/null themselves)."""
    (tmp_path / "real.txt").write_text("old\n", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to("real.txt")
    (tmp_path / "dangling.txt").symlink_to("later.txt")
    for name in ("link.txt", "dangling.txt"):
        with atomic_write(tmp_path / name) as fh:
            fh.write("new\n")
        assert (tmp_path / name).is_symlink()
    assert (tmp_path / "real.txt").read_text(encoding="utf-8") == (tmp_path / "later.txt").read_text() == "new\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    with atomic_write(fifo) as fh:
        fh.write("through\n")
    assert reader.communicate(timeout=10)[0] == "through\n"
    assert fifo.is_fifo()
    code = "from nmtkit.core.files import atomic_write\nwith atomic_write('/dev/stdout') as fh:\n    fh.write('out\\n')"
    before = os.lstat("/dev/stdout").st_mode
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "out\n" and os.lstat("/dev/stdout").st_mode == before
    # stdout a file the shell appends to (>>): written where the output goes, the file kept
    (tmp_path / "log").write_text("before\n", encoding="utf-8")
    for _ in range(2):
        with open(tmp_path / "log", "a", encoding="utf-8") as out:
            subprocess.run([sys.executable, "-c", code], stdout=out, check=True)
    assert (tmp_path / "log").read_text(encoding="utf-8") == "before\nout\nout\n"


def test_staging_writes_through_a_link_and_drops_what_its_command_no_longer_writes(tmp_path):
    """A linked output directory (data-bin -> /scratch/…) was replaced by a plain one, the link
    gone; build-vocab run again without BPE carried the earlier run's codes over beside its new
    vocabulary, where tokenize --bpe-codes would still take them."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for written in (("bpe.codes", "vocab.en.txt"), ("vocab.en.txt",)):
        with Staging(tmp_path / "link", owned=("*.codes", "vocab.*.txt")) as st:
            for name in written:
                st.path(name).write_text(name)
            st.commit()
        assert (tmp_path / "link").is_symlink() and sorted(os.listdir(tmp_path / "real")) == sorted(written)
    (tmp_path / "real" / "notes.txt").write_text("the user's")
    with Staging(f"{tmp_path / 'link'}/", owned=("*.codes",)) as st:  # as a shell completes it
        st.path("bpe.codes").write_text("new")
        st.commit()
    assert (tmp_path / "link").is_symlink()
    assert sorted(os.listdir(tmp_path / "real")) == ["bpe.codes", "notes.txt", "vocab.en.txt"]


def test_a_killed_writer_s_temporary_file_is_removed_by_the_next_write_of_its_file(tmp_path):
    """design.md promised it; only train's save directory had its temporaries removed, and a
    translate killed by the OOM killer left a hidden copy of a half-written output for good."""
    from nmtkit.core.temporaries import HOST as _HOST

    dead = tmp_path / f".out.fr.{_HOST}-{dead_pid()}-gn3vk36f.tmp"
    live = tmp_path / f".out.fr.{_HOST}-{os.getpid()}-abcdefgh.tmp"  # a write still going on
    other = tmp_path / f".other.fr.{_HOST}-{dead_pid()}-gn3vk36f.tmp"  # another file's: its own write's to remove
    for path in (dead, live, other):
        path.write_text("half")
    with atomic_write(tmp_path / "out.fr") as fh:
        fh.write("whole\n")
    assert not dead.exists() and live.exists() and other.exists()
    assert (tmp_path / "out.fr").read_text() == "whole\n"


def test_a_refused_rename_is_said_of_the_output_not_of_the_temporary_file(tmp_path, monkeypatch):
    """Over an immutable file (chattr +i) the error named '.out.txt.HOST-PID-….tmp'."""

    def refused(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted", src, dst)

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(OSError) as err:
        with atomic_write(tmp_path / "out.txt") as fh:
            fh.write("x")
    assert err.value.filename == str(tmp_path / "out.txt") and err.value.filename2 is None
    assert os.listdir(tmp_path) == []


def test_a_name_as_long_as_the_system_allows_is_written_and_its_dead_temporaries_removed(tmp_path):
    """A name of 232 bytes or more was refused as too long: its temporary sibling added 25."""
    from nmtkit.core.temporaries import HOST as _HOST
    from nmtkit.core.temporaries import stem

    name = "é" * 100 + "a" * 51 + ".fr"  # 254 bytes
    dead = tmp_path / f".{stem(name)}.{_HOST}-{dead_pid()}-gn3vk36f.tmp"
    dead.write_text("half")
    with atomic_write(tmp_path / name) as fh:
        fh.write("whole\n")
    assert (tmp_path / name).read_text() == "whole\n" and not dead.exists()
    assert stem(name) != stem(name[:-4] + ".en") and stem("out.fr") == "out.fr"
    with Staging(tmp_path / name.replace(".fr", "d")) as stage:
        stage.path("x").write_text("x")
        stage.commit()
    assert (tmp_path / name.replace(".fr", "d") / "x").exists()


def test_a_full_disk_met_in_a_staging_directory_is_said_of_its_destination(tmp_path):
    """reverse said 'bin/bpe.codes: no space left on device' (the source of its copy), preprocess
    and select named no file, build-vocab its hidden '.v.staging-…/vocab.fr.txt'."""
    dest = tmp_path / "rev"
    full = (errno.ENOSPC, os.strerror(errno.ENOSPC))
    with pytest.raises(OSError) as copied, Staging(dest) as stage:
        raise OSError(*full, str(tmp_path / "bin" / "bpe.codes"), None, str(stage.path("bpe.codes")))
    assert (copied.value.filename, copied.value.filename2) == (str(dest / "bpe.codes"), None)
    with pytest.raises(OSError) as written, Staging(dest) as stage:
        raise OSError(*full)
    assert written.value.filename == str(dest)
    with pytest.raises(OSError) as named, Staging(dest) as stage:
        raise OSError(*full, str(stage.path("vocab.fr.txt")))
    assert named.value.filename == str(dest / "vocab.fr.txt") and not dest.exists()
    with pytest.raises(FileNotFoundError) as missing, Staging(dest):
        open(tmp_path / "no-such-input")  # an input's error keeps its name
    assert missing.value.filename == str(tmp_path / "no-such-input")


def test_an_output_link_that_loops_is_refused_not_replaced(tmp_path):
    """-o loop1 replaced the looping link with a file, where > fails with ELOOP."""
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    with pytest.raises(OSError) as looped, atomic_write(tmp_path / "loop1") as fh:
        fh.write("x")
    assert looped.value.errno == errno.ELOOP and (tmp_path / "loop1").is_symlink()


def test_arriving_lines_join_a_long_line_once_keep_the_lines_before_a_bad_one_and_refuse_a_mark_alone():
    """A line's 64 KiB reads were joined again at each read (40 MB: 12 s before an error); a bad
    byte lost the good lines of its read; a pipe of a byte order mark alone was one empty line."""
    import io

    from nmtkit.core.arriving import ArrivingLines

    blocks = list(ArrivingLines(io.BytesIO(b"ab" * 50 + b"\nc\r\nd\nlast"), most=2, size=7))
    assert blocks == [["ab" * 50, "c"], ["d", "last"]]
    taken = []
    with pytest.raises(UserError, match=r"<stdin>: line 3 is not valid UTF-8 \(byte 0xff"):
        for block in ArrivingLines(io.BytesIO(b"one\ntwo\nbad \xff\nfour\n")):
            taken += block
    assert taken == ["one", "two"]
    for empty in (b"", b"\xef\xbb\xbf"):
        with pytest.raises(UserError, match="<stdin>: is empty"):
            list(ArrivingLines(io.BytesIO(empty)))
    assert list(ArrivingLines(io.BytesIO(b"\xef\xbb\xbfAmen."))) == [["Amen."]]
