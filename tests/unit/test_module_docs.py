"""Every module's documentation is true to its code.

For each library/*.py (plugins/modules of gpuop.gates):
- ``ansible-doc -t module gpuop.gates.<name> --json`` renders it with DOCUMENTATION, EXAMPLES and RETURN;
- the documented options equal the argument spec the module really passes to AnsibleModule (names,
  type, elements, default, required, choices, aliases, and the same for suboptions);
- EXAMPLES parse as YAML, call the module, and each call uses only documented options (suboptions
  too), and passes Ansible's own argument validation against the real spec and its constraints
  (required, types, choices, mutually_exclusive, required_if, ...; templated values are replaced by
  a value of the option's type first).

The argument spec is taken from the code itself, whatever builds it (inline dict, a constant or an
``argument_spec()`` in module_utils, deep copies merged in ``main()``): a subprocess runs the module's
``main()`` with ``AnsibleModule.__init__`` replaced by a function that records its keyword arguments
and stops. This is how ansible-test's validate-modules reads a spec; no module code is changed.
"""

import json
import os
import subprocess

import pytest
import yaml

from gpuop_testlib import COLLECTIONS, ROOT, ansible_env

LIBRARY = os.path.join(ROOT, "library")
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
# Every module of the collection is in library/ (no role ships modules of its own).
FOLDER_OF = {f[:-3]: LIBRARY for f in os.listdir(LIBRARY) if f.endswith(".py") and not f.startswith("_")}
MODULES = sorted(FOLDER_OF)

# Runs in a fresh interpreter (argv: module_utils folder, then module files); prints {name: kwargs}.
_CAPTURE = r"""
import json, os, runpy, sys

import ansible.module_utils.basic

sys.path.insert(0, sys.argv[1])  # the .collections folder: ansible_collections.gpuop.gates.plugins.module_utils


class Captured(BaseException):
    pass


def fake_init(self, *args, **kwargs):
    if args:
        kwargs["argument_spec"] = args[0]
    raise Captured(kwargs)


ansible.module_utils.basic.AnsibleModule.__init__ = fake_init
out = {}
for path in sys.argv[2:]:
    name = os.path.basename(path)[:-3]
    try:
        runpy.run_path(path, run_name="__main__")
    except Captured as exc:
        out[name] = exc.args[0]
    except Exception as exc:  # one module that cannot load must not hide the others
        out[name] = {"error": "loading it failed: %r" % (exc,)}
    else:
        out[name] = {"error": "main() never built an AnsibleModule"}
json.dump(out, sys.stdout, default=repr)
"""


def _ansible_doc(name):
    """``ansible-doc -t module gpuop.gates.<name> --json``, one module per run so one bad doc hides no other."""
    proc = subprocess.run(
        [os.path.join(ROOT, ".venv", "bin", "ansible-doc"), "-t", "module", "gpuop.gates." + name, "--json"],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, "ansible-doc %s failed (rc=%s):\n%s" % (name, proc.returncode, proc.stderr)
    data = json.loads(proc.stdout)
    assert "gpuop.gates." + name in data, "ansible-doc did not render %s:\n%s" % (name, proc.stderr)
    return data["gpuop.gates." + name]


@pytest.fixture(scope="module")
def docs():
    """ansible-doc's JSON of each module, rendered once per test run (on first use)."""
    cache = {}

    def get(name):
        if name not in cache:
            try:
                cache[name] = (_ansible_doc(name), None)
            except AssertionError as exc:
                cache[name] = (None, str(exc))
        doc, error = cache[name]
        assert error is None, error
        return doc
    return get


@pytest.fixture(scope="module")
def specs():
    """The keyword arguments each module's main() passes to AnsibleModule."""
    proc = subprocess.run(
        [PYTHON, "-c", _CAPTURE, COLLECTIONS]
        + [os.path.join(FOLDER_OF[m], m + ".py") for m in MODULES],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, "capturing the argument specs failed:\n%s" % proc.stderr
    return json.loads(proc.stdout)


def _doc(docs, name):
    return docs(name)


def _spec(specs, name):
    captured = specs[name]
    assert "error" not in captured, "%s: %s" % (name, captured.get("error"))
    return captured["argument_spec"]


def _norm_choices(choices):
    return None if choices is None else sorted(repr(c) for c in choices)


def _doc_view(options):
    """Documented options, in the fields AnsibleModule acts on (absent fields as AnsibleModule reads them)."""
    view = {}
    for name, opt in (options or {}).items():
        view[name] = {
            "type": opt.get("type", "str"),
            "elements": opt.get("elements"),
            "default": opt.get("default"),
            "required": bool(opt.get("required", False)),
            "choices": _norm_choices(opt.get("choices")),
            "aliases": sorted(opt.get("aliases") or []),
            "options": _doc_view(opt["suboptions"]) if opt.get("suboptions") else None,
        }
    return view


def _spec_view(spec):
    """The argument spec, in the same shape as _doc_view."""
    view = {}
    for name, opt in (spec or {}).items():
        view[name] = {
            "type": opt.get("type", "str"),
            "elements": opt.get("elements"),
            "default": opt.get("default"),
            "required": bool(opt.get("required", False)),
            "choices": _norm_choices(opt.get("choices")),
            "aliases": sorted(opt.get("aliases") or []),
            "options": _spec_view(opt["options"]) if opt.get("options") else None,
        }
    return view


def _same(a, b):
    """Equal values of the same kind: 60 and 60.0 are the same default; "True" and True, 0 and False are not."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b
    return type(a) is type(b) and a == b


def _differences(documented, coded, where=""):
    """Human-readable list of every difference between the documented and the coded options."""
    out = []
    for name in sorted(set(documented) - set(coded)):
        out.append("%s%s: documented but not in the argument spec" % (where, name))
    for name in sorted(set(coded) - set(documented)):
        out.append("%s%s: in the argument spec but not documented" % (where, name))
    for name in sorted(set(documented) & set(coded)):
        doc, code = documented[name], coded[name]
        for field in ("type", "elements", "default", "required", "choices", "aliases"):
            if not _same(doc[field], code[field]):
                out.append("%s%s.%s: documented %r, code %r" % (where, name, field, doc[field], code[field]))
        if doc["options"] or code["options"]:
            out.extend(_differences(doc["options"] or {}, code["options"] or {}, "%s%s." % (where, name)))
    return out


@pytest.mark.parametrize("name", MODULES)
def test_ansible_doc_renders_documentation_examples_and_return(docs, name):
    doc = _doc(docs, name)
    assert doc["doc"]["module"] == name
    assert doc["doc"].get("short_description"), "%s: no short_description" % name
    assert doc["doc"].get("description"), "%s: no description" % name
    assert isinstance(doc.get("examples"), str) and doc["examples"].strip(), "%s: no EXAMPLES" % name
    assert isinstance(doc.get("return"), dict) and doc["return"], "%s: no RETURN" % name
    for key, ret in doc["return"].items():
        assert ret.get("description") and ret.get("returned") and ret.get("type"), (
            "%s: RETURN %s needs description, returned and type" % (name, key))


@pytest.mark.parametrize("name", MODULES)
def test_documented_options_equal_the_argument_spec(docs, specs, name):
    documented = _doc_view(_doc(docs, name)["doc"].get("options"))
    coded = _spec_view(_spec(specs, name))
    problems = _differences(documented, coded)
    assert not problems, "%s's DOCUMENTATION differs from its argument spec:\n  %s" % (name, "\n  ".join(problems))


def _check_args(args, documented, where):
    """Options of one call that the documentation does not list (recursing into literal dict suboptions)."""
    problems = []
    known = set(documented)
    for opt in documented.values():
        known.update(opt.get("aliases") or [])
    for key in sorted(set(args) - known):
        problems.append("%s%s is not a documented option" % (where, key))
    for key, value in args.items():
        opt = documented.get(key) or {}
        if opt.get("suboptions") and isinstance(value, dict):
            problems.extend(_check_args(value, opt["suboptions"], "%s%s." % (where, key)))
    return problems


_PLACEHOLDERS = {"str": "x", "path": "/x", "raw": "x", "int": 1, "float": 1.0, "bool": True, "list": ["x"],
                 "dict": {}}


def _untemplated(args, spec):
    """The call's arguments with each Jinja-templated value replaced by a value of the option's type."""
    out = {}
    aliases = dict((alias, name) for name, opt in spec.items() for alias in opt.get("aliases") or [])
    for key, value in args.items():
        opt = spec.get(aliases.get(key, key)) or {}
        if isinstance(value, str) and "{{" in value:
            value = _PLACEHOLDERS.get(opt.get("type", "str"), "x")
        elif isinstance(value, dict) and opt.get("options"):
            value = _untemplated(value, opt["options"])
        out[key] = value
    return out


def _invalid_call(args, captured):
    """Ansible's own argument validation of one call against the module's real spec and constraints."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    validator = ArgumentSpecValidator(
        captured["argument_spec"],
        **dict((k, captured.get(k)) for k in ("mutually_exclusive", "required_together", "required_one_of",
                                              "required_if", "required_by") if captured.get(k))
    )
    return [str(error) for error in validator.validate(_untemplated(args, captured["argument_spec"])).errors]


@pytest.mark.parametrize("name", MODULES)
def test_examples_parse_and_use_only_documented_options(docs, specs, name):
    doc = _doc(docs, name)
    tasks = yaml.safe_load(doc["examples"])
    assert isinstance(tasks, list) and tasks, "%s: EXAMPLES is not a YAML list of tasks" % name
    documented = doc["doc"].get("options") or {}
    _spec(specs, name)
    calls = 0
    problems = []
    for number, task in enumerate(tasks, 1):
        assert isinstance(task, dict), "%s: EXAMPLES item %d is not a task" % (name, number)
        # Examples are copied into playbooks that use the installed collection: by FQCN only.
        assert name not in task, "%s: EXAMPLES task %d calls the module by its short name" % (name, number)
        for key in ("gpuop.gates." + name,):
            if key in task:
                calls += 1
                args = task[key] or {}
                where = "task %d (%s): " % (number, task.get("name"))
                assert isinstance(args, dict), "%s%s gives free-form arguments" % (where, name)
                problems.extend(_check_args(args, documented, where))
                problems.extend(where + msg for msg in _invalid_call(args, specs[name]))
    assert calls, "%s: no task in EXAMPLES calls the module" % name
    assert not problems, "%s's EXAMPLES:\n  %s" % (name, "\n  ".join(problems))


def test_every_library_module_is_rendered_and_its_spec_read(docs, specs):
    assert len(MODULES) >= 7, MODULES
    assert [docs(name)["doc"]["module"] for name in MODULES] == MODULES
    assert sorted(specs) == MODULES
