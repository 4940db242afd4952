#!/usr/bin/env python3
"""Build the collection gpuop.gates from this checkout: dist/gpuop-gates-<version>.tar.gz.

The checkout is the collection's source, each file once. Two folders of the design card stand where a
collection has other names: library/ is plugins/modules and module_utils/ is plugins/module_utils
(committed links say so). The build stages the files git tracks, with those two folders copied under
their collection names, into a temporary folder of this build's own (removed after it; two builds at once,
as make test's two streams may run, never share one), then runs `ansible-galaxy collection build` there.

Usage: tools/build-collection.py [--output-path DIR]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the artifact holds (paths in the checkout -> paths in the collection).
RENAMED = {"library/": "plugins/modules/", "module_utils/gpuop/": "plugins/module_utils/"}
INCLUDED = ("galaxy.yml", "LICENSE", "CHANGELOG.md", "requirements.txt", "meta/", "plugins/", "roles/",
            "docs/", "tools/controlplane/", "tools/containerd/")


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit("build-collection: the build stages the files git tracks, and git ls-files failed: %s" % exc)
    return [p for p in out.decode().split("\0") if p]


def staged_name(path):
    for old, new in RENAMED.items():
        if path.startswith(old):
            return new + path[len(old):]
    if path.startswith(INCLUDED) or path in INCLUDED:
        return path
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-path", default=os.path.join(ROOT, "dist"))
    args = parser.parse_args()
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    work = tempfile.mkdtemp(prefix="gpuop-collection-build.")
    try:
        return build(galaxy, os.path.join(work, "ansible_collections", galaxy["namespace"], galaxy["name"]),
                     os.path.abspath(args.output_path))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build(galaxy, stage, output_path):
    count = 0
    for path in tracked_files():
        source = os.path.join(ROOT, path)
        name = staged_name(path)
        # The committed links (plugins/modules, plugins/module_utils) are staged from their targets.
        if name is None or os.path.islink(source):
            continue
        target = os.path.join(stage, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target)
        count += 1
    os.makedirs(output_path, exist_ok=True)
    print("build-collection: staged %d files of %s.%s in %s" % (count, galaxy["namespace"], galaxy["name"], stage))
    # The ansible-galaxy beside this Python (the venv's) when there is one, else the one on PATH.
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    proc = subprocess.run([beside if os.path.isfile(beside) else "ansible-galaxy", "collection", "build", stage,
                           "--output-path", output_path,
                           "--force"], check=False)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
