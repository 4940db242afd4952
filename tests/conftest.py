"""Shared pytest set-up: gpuop's module_utils on sys.path, and real modules run through Ansible."""

import pytest

from gpuop_testlib import ROOT, ansible_env, run_module  # noqa: F401  (ROOT also puts module_utils on sys.path)


@pytest.fixture
def module_runner():
    return run_module
