"""The local engine's workers end with their driver, even when the driver is killed with SIGKILL."""
import os
import signal
import subprocess
import sys
import textwrap
import time

DRIVER = textwrap.dedent("""
    import multiprocessing, os, sys, time
    from odcf.batch.local import exit_with_parent

    def child(parent):
        exit_with_parent(parent, poll=0.1)
        time.sleep(60)

    if __name__ == "__main__":
        p = multiprocessing.get_context("spawn").Process(target=child, args=(os.getpid(),))
        p.start()
        print(p.pid, flush=True)
        time.sleep(60)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:  # a zombie is gone for our purpose
        return fh.read().split(") ", 1)[1][0] != "Z"


def test_a_worker_ends_when_its_driver_is_killed(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    driver = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(driver.stdout.readline())
        time.sleep(0.5)
        assert _alive(child)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child)
    finally:
        driver.kill()
