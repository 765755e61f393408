import os
import stat

import pytest

from odcf.errors import InputError
from odcf.fileio import AtomicFile, write_text


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") == "new"


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(tmp_path):
    old = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.txt"
        write_text(fresh, "x")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        kept = tmp_path / "kept.txt"
        kept.write_text("x", encoding="utf-8")
        kept.chmod(0o640)
        write_text(kept, "y")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text(encoding="utf-8") == "y"
    finally:
        os.umask(old)


def test_a_device_is_written_directly_not_replaced():
    write_text("/dev/null", "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_missing_folders_are_created_and_a_folder_target_is_one_clear_error(tmp_path):
    write_text(tmp_path / "a" / "b" / "out.txt", "x")
    assert (tmp_path / "a" / "b" / "out.txt").read_text(encoding="utf-8") == "x"
    with pytest.raises(InputError, match="cannot write"):
        write_text(tmp_path / "a", "x")
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old\n")
    with pytest.raises(RuntimeError):
        with AtomicFile(target) as fh:
            fh.write(b"half")
            raise RuntimeError("stop")
    assert target.read_bytes() == b"old\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
