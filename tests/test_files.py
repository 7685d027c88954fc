"""Strict reading, parallel checks and atomic outputs."""

import os

import pytest

from nmtkit.errors import UserError
from nmtkit.files import Staging, atomic_write, check_parallel, count_lines, read_lines


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


def test_read_lines_keeps_empty_lines_and_strips_crlf(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"a\r\n\nb")
    assert list(read_lines(f)) == ["a", "", "b"]
    assert count_lines(f) == 3


def test_check_parallel_names_unpartnered_lines(tmp_path):
    (tmp_path / "a").write_text("1\n2\n3\n4\n")
    (tmp_path / "b").write_text("1\n2\n")
    with pytest.raises(UserError, match=r"a has 4, .*b has 2 lines\): lines 3-4 have no partner"):
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


def test_staging_commits_all_or_nothing(tmp_path):
    dest = tmp_path / "d"
    with pytest.raises(RuntimeError):
        with Staging(dest) as st:
            st.path("a").write_text("x")
            raise RuntimeError
    assert list(dest.iterdir()) == []
    with Staging(dest) as st:
        st.path("a").write_text("x")
        st.path("manifest").write_text("m")
        st.commit(last=("manifest",))
    assert sorted(p.name for p in dest.iterdir()) == ["a", "manifest"]
