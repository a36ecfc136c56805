"""Two nightly runs never overlap: the second one is refused with a message naming the holder."""

from __future__ import annotations

import os

import pytest

from tasks.processes import RunLockedError, run_lock


def test_second_run_is_refused_and_lock_released_after(tmp_path):
    lock = tmp_path / "nightly.lock"
    with run_lock(lock), pytest.raises(RunLockedError, match=f"pid {os.getpid()}"), run_lock(lock):
        pass
    with run_lock(lock):  # released when the first run ended
        pass
