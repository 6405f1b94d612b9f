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

.PHONY: help test demo venv lint sanity unit compat integration package clean-cache

help:
	@echo "make test   - lint, sanity, unit, compat (oldest and newest versions), package, virtual GPU cluster build + integration, molecule"
	@echo "make demo   - virtual GPU cluster + playbooks/site.yml + GPU fleet before/after"
	@echo "make venv   - only create the pinned virtualenv ($(VENV))"

$(VENV)/.done: $(REQS)
	@echo "== setting up $(VENV)"
	@$(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -U pip
	@$(VENV)/bin/pip install -q --disable-pip-version-check -r $(REQS)
	@touch $@

venv: $(VENV)/.done

# On a new machine the virtual GPU cluster's Go build and the virtualenv each take minutes: the build starts in
# the background (its log in $(BUILD_LOG)) while `make venv` runs; tests/testbed/build.sh holds a lock, so the
# stage that needs the binaries waits for that build and finds them cached, or builds again and shows why not.
BUILD_LOG := $(GPUOPS_CACHE)/testbed-build.log
define start_build
	@mkdir -p $(GPUOPS_CACHE)
	@echo "== building the virtual GPU cluster's binaries in the background (log: $(BUILD_LOG))"
	@bash tests/testbed/build.sh >$(BUILD_LOG) 2>&1 &
endef

# `make test STAGES="unit sanity"` runs a subset; default is every stage.
test:
ifneq ($(filter-out lint sanity unit compat package,$(or $(STAGES),integration)),)
	$(start_build)
endif
	@$(MAKE) --no-print-directory venv
	@$(VPY) tests/runner.py $(STAGES)

lint sanity unit compat integration package: venv
	@$(VPY) tests/runner.py $@

demo:
	$(start_build)
	@$(MAKE) --no-print-directory venv
	@$(VPY) tests/runner.py demo

clean-cache:
	rm -rf $(GPUOPS_CACHE)
