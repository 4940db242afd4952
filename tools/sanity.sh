#!/usr/bin/env bash
# ansible-test sanity for the collection gpuop.gates, locally and without Docker.
#
#   tools/sanity.sh [ansible-test sanity options...]    e.g. tools/sanity.sh --test pylint
#
# 1. builds the collection from this checkout (tools/build-collection.py -> dist/<ns>-<name>-<version>.tar.gz);
# 2. installs the tarball into a temporary ansible_collections/ tree (ansible-test needs the collection
#    root at ansible_collections/<ns>/<name>; no git repository is needed there) and copies tests/sanity/
#    (the ignore file) beside it, since the artifact holds no tests/;
# 3. runs `ansible-test sanity --venv` there: ansible-test makes one virtual environment per test under
#    ~/.ansible/test/venv and installs that test's pinned requirements from PyPI the first time (cold);
#    later runs reuse them and need no network (warm). Nothing is installed into .venv.
#
# Target Pythons: every version ansible-test supports (3.8-3.13 for modules and module_utils, 3.11-3.13
# for controller plugins) that is installed here, found as pyenv versions or as working python3.X on
# PATH, and linked as python3.X into a folder first on PATH (pyenv's shims do not answer for versions
# that are not selected). compile and import run once per version; the other tests run once on .venv's
# Python. A version that is not installed is skipped by ansible-test, which says so.
#
# ansible-test bootstraps pip in each new environment with a script it downloads from a host outside
# PyPI, which is not reachable here; a small stand-in for it (pip run from its PyPI wheel) is written to
# ~/.ansible/test/cache, where ansible-test looks for that script first.
#
# Exits non-zero on any finding (or setup failure). SANITY_KEEP=1 keeps the temporary tree.
set -euo pipefail

START=$SECONDS
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV_BIN=$(cd "$(dirname "$0")/../.venv/bin" && pwd)
export PATH="$VENV_BIN:$PATH"
# The checkout's ansible.cfg (collections_path = .collections, a link back here) must not steer the
# install or the test run.
unset ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS

run() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    "$@"
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpuop-sanity.XXXXXX")
cleanup() {
    if [ "${SANITY_KEEP:-0}" = 1 ]; then
        echo "sanity: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

# ---- 1. build
run python "$ROOT/tools/build-collection.py"
read -r NAMESPACE NAME VERSION < <(python -c '
import sys, yaml
g = yaml.safe_load(open(sys.argv[1]))
print(g["namespace"], g["name"], g["version"])' "$ROOT/galaxy.yml")
TARBALL="$ROOT/dist/$NAMESPACE-$NAME-$VERSION.tar.gz"

# ---- 2. install into a temporary collections tree
cd "$WORK"
run ansible-galaxy collection install --force "$TARBALL" -p "$WORK/collections"
COLL="$WORK/collections/ansible_collections/$NAMESPACE/$NAME"
if [ -d "$ROOT/tests/sanity" ]; then
    mkdir -p "$COLL/tests"
    run cp -R "$ROOT/tests/sanity" "$COLL/tests/sanity"
fi

# ---- pip bootstrap stand-in (see above)
PIP_VERSION=$(python - <<'EOF'
import os, re, ansible_test
path = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
print(re.search(r"pip='([0-9.]+)'", open(path).read()).group(1))
EOF
)
CACHE="$HOME/.ansible/test/cache"
GET_PIP="$CACHE/get_pip_${PIP_VERSION//./_}.py"
WHEEL="$CACHE/pip-$PIP_VERSION-py3-none-any.whl"
MARKER="# gpuop tools/sanity.sh: stand-in for ansible-test's get-pip-$PIP_VERSION.py"
mkdir -p "$CACHE"
if [ ! -f "$WHEEL" ]; then
    run python -m pip download --disable-pip-version-check --no-deps --dest "$CACHE" "pip==$PIP_VERSION"
fi
if [ ! -f "$GET_PIP" ] || head -n 1 "$GET_PIP" | grep -qxF "$MARKER"; then
    # Rewritten each run when it is ours; a real get-pip script someone saved there is left alone.
    cat > "$GET_PIP" <<EOF
$MARKER
"""Installs what ansible-test's bootstrap asks for (pip==$PIP_VERSION) with pip run from its wheel beside
this file, offline, as get-pip.py does with the pip it embeds. get-pip.py's own --no-setuptools and
--no-wheel are dropped: this stand-in never installs setuptools or wheel."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WHEEL = os.path.join(HERE, "pip-$PIP_VERSION-py3-none-any.whl")
sys.path.insert(0, WHEEL)

from pip._internal.cli.main import main  # noqa: E402

ARGS = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--upgrade", "--force-reinstall", "--no-index", "--find-links", HERE] + ARGS))
EOF
fi

# ---- the target Pythons installed here
mkdir -p "$WORK/bin"
read -r -a VERSIONS < <(python -c '
from ansible_test._util.target.common.constants import REMOTE_ONLY_PYTHON_VERSIONS, CONTROLLER_PYTHON_VERSIONS
print(" ".join(REMOTE_ONLY_PYTHON_VERSIONS + CONTROLLER_PYTHON_VERSIONS))')
FOUND=() MISSING=()
for v in "${VERSIONS[@]}"; do
    interp=""
    for candidate in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".* 2>/dev/null | sort -V -r); do
        if [ -x "$candidate/bin/python$v" ]; then
            interp="$candidate/bin/python$v"
            break
        fi
    done
    if [ -z "$interp" ] && command -v "python$v" >/dev/null && "python$v" -c 'import sys' 2>/dev/null; then
        interp=$("python$v" -c 'import os, sys; print(os.path.realpath(sys.executable))')
    fi
    if [ -n "$interp" ]; then
        ln -s "$interp" "$WORK/bin/python$v"
        FOUND+=("$v=$interp")
    else
        MISSING+=("$v")
    fi
done
export PATH="$WORK/bin:$PATH"
echo "sanity: target Pythons: ${FOUND[*]}"
if [ "${#MISSING[@]}" -gt 0 ]; then
    echo "sanity: WARNING: not installed here, so not tested: Python ${MISSING[*]}"
fi

# ---- 3. ansible-test sanity
cd "$COLL"
set +e
run ansible-test sanity --venv --color no "$@"
rc=$?
set -e
echo "sanity: ansible-test sanity exited $rc after $((SECONDS - START)) s"
exit $rc
