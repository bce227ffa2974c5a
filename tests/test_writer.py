"""atomic_write: the file holds the old bytes or the new ones, never a mix, never nothing."""

from __future__ import annotations

import os
import stat

import pytest

from accumlint import writer
from accumlint.writer import ChangedOnDisk, atomic_write


def test_replaces_content_and_keeps_mode(tmp_path):
    path = tmp_path / "f.py"
    path.write_bytes(b"old\n")
    path.chmod(0o640)
    atomic_write(str(path), b"new\r\n\x00bytes")
    assert path.read_bytes() == b"new\r\n\x00bytes"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["f.py"]


def test_refuses_when_the_file_changed_since_it_was_read(tmp_path):
    path = tmp_path / "f.py"
    path.write_bytes(b"edited by someone else\n")
    with pytest.raises(ChangedOnDisk):
        atomic_write(str(path), b"fixed\n", expected=b"what we read\n")
    assert path.read_bytes() == b"edited by someone else\n"
    assert os.listdir(tmp_path) == ["f.py"]


def test_failure_before_the_rename_keeps_the_original(tmp_path, monkeypatch):
    path = tmp_path / "f.py"
    path.write_bytes(b"precious\n")

    def crash(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(writer.os, "fsync", crash)
    with pytest.raises(OSError):
        atomic_write(str(path), b"new\n")
    assert path.read_bytes() == b"precious\n"
    assert os.listdir(tmp_path) == ["f.py"]


def test_temp_file_is_in_the_same_folder_so_the_rename_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "f.py"
    path.write_bytes(b"x\n")
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((os.path.dirname(src), dst))
        real_replace(src, dst)

    monkeypatch.setattr(writer.os, "replace", spy)
    atomic_write(str(path), b"y\n")
    assert seen == [(str(tmp_path), os.path.realpath(path))]


def test_symlink_stays_a_symlink(tmp_path):
    target = tmp_path / "real.py"
    target.write_bytes(b"a\n")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    atomic_write(str(link), b"b\n")
    assert link.is_symlink() and target.read_bytes() == b"b\n"
