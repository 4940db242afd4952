# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Deterministic file output: compare, diff, and atomic replace (temp file in the same folder); exclusive locks."""

import contextlib
import fcntl
import os
import re
import stat
import tempfile
import time

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError


def read_text(path):
    """Return the file's text, or None when it does not exist."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


LOCK_POLL = 0.2


@contextlib.contextmanager
def exclusive_lock(path, timeout, busy, clock=time.monotonic, sleep=time.sleep):
    """Hold ``path`` exclusively (flock: released when the process ends, however it ends).

    Another holder is waited for, polled every ``LOCK_POLL`` seconds, for at most ``timeout`` seconds; then
    GpuopError(``busy``). Yields the seconds waited.
    """
    with open(path, "a") as handle:
        started = clock()
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except (BlockingIOError, PermissionError):
                if clock() - started >= timeout:
                    raise GpuopError(busy)
                sleep(LOCK_POLL)
        try:
            yield clock() - started
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def atomic_write(path, content, mode=0o644, owner=None):
    """Write ``content`` to ``path`` through a temp file in the same folder, then rename.

    A reader (or a run killed half-way) sees the old file or the new one, never a part. ``owner``
    (uid, gid) is given to the temp file before the rename, so the new file never has another owner.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    prefix = "." + os.path.basename(path) + "."
    # A run killed between mkstemp and rename leaves its temp file: the next write of the same file removes it.
    stale = re.compile(re.escape(prefix) + r"[A-Za-z0-9_]{8}\.tmp\Z")
    for name in os.listdir(folder):
        if stale.match(name):
            try:
                os.unlink(os.path.join(folder, name))
            except FileNotFoundError:
                pass
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if owner is not None:
            os.chown(tmp, owner[0], owner[1])
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def ensure_file(path, content, mode=0o644, check_mode=False):
    """Make ``path`` hold exactly ``content`` with ``mode``.

    Returns ``(changed, diff)`` where diff is Ansible's before/after dict. In check mode the
    answer is computed and nothing is written, not even a parent folder.
    """
    try:
        return _ensure_file(path, content, mode, check_mode)
    except OSError as exc:
        # A folder that cannot be made or written, a path through a file, a directory in the way.
        raise GpuopError("cannot write %s: %s" % (path, exc.strerror or exc))
    except UnicodeDecodeError as exc:
        raise GpuopError("cannot compare %s with what to write: it is not UTF-8 text (byte %d)" % (path, exc.start))


def _ensure_file(path, content, mode, check_mode):
    before = read_text(path)
    current_mode = None
    if before is not None:
        current_mode = stat.S_IMODE(os.stat(path).st_mode)
    content_changed = before != content
    mode_changed = before is not None and current_mode != mode
    diff = {
        "before": before if before is not None else "",
        "after": content,
        "before_header": "%s (content)" % path,
        "after_header": "%s (content)" % path,
    }
    if not (content_changed or mode_changed):
        return False, diff
    if not check_mode:
        if content_changed:
            atomic_write(path, content, mode)
        else:
            os.chmod(path, mode)
    return True, diff


def key_value_lines(pairs):
    """Render ``[(KEY, value), ...]`` as ``KEY=value`` lines with a trailing newline."""
    return "".join("%s=%s\n" % (key, value) for key, value in pairs)
