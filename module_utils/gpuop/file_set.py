# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Folders and files made to hold exactly what is asked, in one module run (the ``file_set`` module).

Pure logic over :mod:`gpuop.files`: each file is compared, and written through a temporary file in
its own folder then renamed, only when its content or mode differs; each folder is made (with its
parents) or given its mode. A role that chained a ``file`` loop and one ``template`` per file makes
one module run instead of one per item.
"""

import os
import stat

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.files import ensure_file


# A list of files to write: one definition for every module that writes files (file_set, k8s_apply).
FILES_SPEC = {"type": "list", "elements": "dict", "default": [], "options": {
    "path": {"type": "path", "required": True},
    "content": {"type": "str", "required": True},
    "mode": {"type": "raw", "default": "0644"},
}}


def argument_spec():
    return {
        "directories": {"type": "list", "elements": "dict", "default": [], "options": {
            "path": {"type": "path", "required": True},
            "mode": {"type": "raw", "default": "0755"},
        }},
        "files": FILES_SPEC,
        "absent": {"type": "list", "elements": "path", "default": []},
    }


def parse_mode(value, where):
    """An octal mode given as a string (``"0755"``) or a number (``0o755``, 493) -> int; bad -> GpuopError."""
    try:
        mode = int(value, 8) if isinstance(value, str) else value
    except ValueError:
        mode = None
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o7777:
        raise GpuopError("%s: mode %r is not an octal file mode (e.g. \"0644\")" % (where, value))
    return mode


def ensure_directory(path, mode, check_mode=False):
    """Make ``path`` a folder with ``mode`` (parents made as needed). Returns ``(changed, diff)``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise GpuopError("cannot make folder %s: %s" % (path, exc.strerror or exc))
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise GpuopError("cannot make folder %s: something that is not a folder is in the way" % path)
    before = None if info is None else stat.S_IMODE(info.st_mode)
    diff = {"before_header": "%s (folder)" % path, "after_header": "%s (folder)" % path,
            "before": "absent\n" if before is None else "folder, mode %04o\n" % before,
            "after": "folder, mode %04o\n" % mode}
    if before == mode:
        return False, diff
    if not check_mode:
        try:
            if info is None:
                os.makedirs(path, mode=mode, exist_ok=True)
            os.chmod(path, mode)  # makedirs' mode passes through the umask
        except OSError as exc:
            raise GpuopError("cannot make folder %s: %s" % (path, exc.strerror or exc))
    return True, diff


def remove_file(path, check_mode=False):
    """Remove the file ``path`` when it is there. Returns ``(changed, diff)``; a folder in the way is refused."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False, None
    except OSError as exc:
        raise GpuopError("cannot remove %s: %s" % (path, exc.strerror or exc))
    if stat.S_ISDIR(info.st_mode):
        raise GpuopError("cannot remove %s: it is a folder (absent removes files only)" % path)
    diff = {"before_header": path, "after_header": path, "before": "present\n", "after": "absent\n"}
    if not check_mode:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False, None
        except OSError as exc:
            raise GpuopError("cannot remove %s: %s" % (path, exc.strerror or exc))
    return True, diff


def modes(kind, items, default):
    """The mode of each of ``items`` (``kind``: directories or files), checked before anything is made."""
    return [parse_mode(item.get("mode", default), "%s[%d] (%s)" % (kind, index, item.get("path")))
            for index, item in enumerate(items)]


def make(kind, items, item_modes, result, check_mode=False):
    """Make each folder, write each file, or remove each file (``kind``: directories, files, absent) of
    ``items`` (with its mode; none for absent); record it in ``result`` (``result[kind]``, ``changed``,
    ``diff``), as the modules return it."""
    for item, mode in zip(items, item_modes):
        if kind == "directories":
            changed, diff = ensure_directory(item["path"], mode, check_mode)
        elif kind == "absent":
            changed, diff = remove_file(item["path"], check_mode)
        else:
            changed, diff = ensure_file(item["path"], item["content"], mode=mode, check_mode=check_mode)
        result[kind].append({"path": item["path"], "changed": changed})
        if changed:
            result["changed"] = True
            result["diff"].append(diff)


def run(params, check_mode=False):
    """Folders first, then files, then the files to remove, in the order given. Returns the module's result
    (changed, directories, files, absent, diff). All bad input (relative path, bad mode, a path both written
    and removed) is refused before anything is made."""
    directories = params.get("directories") or []
    files = params.get("files") or []
    absent = [{"path": path} for path in params.get("absent") or []]
    for kind, items in (("directories", directories), ("files", files), ("absent", absent)):
        for index, item in enumerate(items):
            if not os.path.isabs(item.get("path") or ""):
                raise GpuopError("%s[%d] (%s): path must be absolute" % (kind, index, item.get("path")))
    both = sorted(set(os.path.normpath(f["path"]) for f in files) & set(os.path.normpath(a["path"]) for a in absent))
    if both:
        raise GpuopError("absent: %s is also in files (a file is either written or removed)" % ", ".join(both))
    directory_modes, file_modes = modes("directories", directories, "0755"), modes("files", files, "0644")
    result = {"changed": False, "directories": [], "files": [], "absent": [], "diff": []}
    make("directories", directories, directory_modes, result, check_mode)
    make("files", files, file_modes, result, check_mode)
    make("absent", absent, [None] * len(absent), result, check_mode)
    return result
