# gpuop: the two commands are `make run` and `make test`. Both install what is missing first.
SHELL := /bin/bash
VENV := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# Debian packages: containerd 1.6 (the 1.x sandbox daemon, its `config dump` checks the merge
# predictions); strace (tests/integration/test_guards.py proves site.yml writes nothing outside its root).
# openssh-server and sudo: node twins are reached over real SSH, and playbooks/nodes.yml becomes root
# through sudo on them, as on a real node. chromium: tests/integration/test_doctor_html.py renders doctor.html.
APT_PACKAGES := containerd strace openssh-server sudo chromium

.PHONY: run test test-faults setup apt venv collection-link collection sanity toolchain lint reset clean-test help

help:
	@echo "make run    - install what is missing, then ansible-playbook site.yml (the whole incident)"
	@echo "make test   - install what is missing, then pytest and every molecule scenario"
	@echo "make reset  - delete the lab's cluster and outputs (playbooks/reset.yml)"
	@echo "make collection - build the collection gpuop.gates: dist/gpuop-gates-<version>.tar.gz"

run: setup
	ansible-playbook site.yml

test: setup
	bash tests/run-all.sh

# The fault suite (~23 min): kills at every step boundary and wait, control-plane faults, GPU nodes that fail
# mid-rollout, bad input. CI (.ci/run) runs it after make test, every time. docs/reliability.md
test-faults: setup
	pytest -q --durations=0 tests/faults

setup: apt venv collection-link

# The checkout is the collection gpuop.gates: ansible.cfg's collections_path (.collections) holds a link back
# to this folder, so every playbook and test finds gpuop.gates.* here, as in an installed collection.
COLLECTION_LINK := .collections/ansible_collections/gpuop/gates
collection-link:
	@test -L $(COLLECTION_LINK) || { mkdir -p $(dir $(COLLECTION_LINK)) && ln -sfn ../../.. $(COLLECTION_LINK); }

# The installable artifact, built from the tracked files (tools/build-collection.py).
collection: setup
	python tools/build-collection.py

# ansible-test sanity on the built collection, installed in a temporary tree (make test runs it too).
sanity: setup
	bash tools/sanity.sh

apt:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt constraints.txt requirements.yml
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	$(VENV)/bin/ansible-galaxy collection install --offline -r requirements.yml
	@touch $@

toolchain: setup
	ansible-playbook playbooks/cluster.yml --tags toolchain_preflight,toolchain_build

lint: setup
	ansible-lint --profile production

reset: setup
	ansible-playbook playbooks/reset.yml
