# gpuops.gpu — the two commands: `make demo` and `make test`.
# Everything this file builds or installs lives outside the work tree, under $(GPUOPS_CACHE).

SHELL := /bin/bash
PYTHON ?= python3
GPUOPS_CACHE ?= $(HOME)/.cache/gpuops
export GPUOPS_CACHE

REQS := tests/requirements-dev.txt
VENV_KEY := $(shell cat $(REQS) | sha256sum | cut -c1-12)
VENV := $(GPUOPS_CACHE)/venv-$(VENV_KEY)
VPY := $(VENV)/bin/python

.PHONY: help test demo venv lint sanity unit integration package clean-cache

help:
	@echo "make test   - lint, sanity, unit, package, virtual GPU cluster build + integration, molecule"
	@echo "make demo   - virtual GPU cluster + playbooks/site.yml + GPU fleet before/after"
	@echo "make venv   - only create the pinned virtualenv ($(VENV))"

$(VENV)/.done: $(REQS)
	@echo "== setting up $(VENV)"
	@$(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -U pip
	@$(VENV)/bin/pip install -q --disable-pip-version-check -r $(REQS)
	@touch $@

venv: $(VENV)/.done

# `make test STAGES="unit sanity"` runs a subset; default is every stage.
test: venv
	@$(VPY) tests/runner.py $(STAGES)

lint sanity unit integration package: venv
	@$(VPY) tests/runner.py $@

demo: venv
	@$(VPY) tests/runner.py demo

clean-cache:
	rm -rf $(GPUOPS_CACHE)
