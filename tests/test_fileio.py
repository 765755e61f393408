import os
import stat

import pytest

from odcf.errors import InputError
from odcf.fileio import AtomicFile, decode_text, write_text


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


def test_decode_text_is_the_one_way_files_are_read():
    assert decode_text(b"\xef\xbb\xbfPay $5.\n", "a.txt") == "Pay $5.\n"  # the BOM is an encoding mark, not text
    assert decode_text(b"Pay \xef\xbb\xbf$5.", "a.txt") == "Pay \ufeff$5."  # only a leading one
    with pytest.raises(InputError, match=r"a\.txt:1: invalid UTF-8 at byte 5 \(line 1, column 3\)"):
        decode_text(b"\xef\xbb\xbfok\xff", "a.txt")  # the offset counts the BOM's bytes
    with pytest.raises(InputError, match="NUL byte at offset 1"):
        decode_text(b"a\x00b", "a.txt")
    assert decode_text(b"a\x00b", "a.txt", allow_nul=True) == "a\x00b"
    with pytest.raises(InputError, match="UTF-16"):
        decode_text("x".encode("utf-16"), "a.txt")
