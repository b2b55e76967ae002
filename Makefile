# vlmrl: `make demo` runs the main job, `make test` runs every check.  Both set up the venv first.
SHELL := /bin/bash
PY := .venv/bin/python
PIP := .venv/bin/pip
STAMP := .venv/.setup-stamp
APT_PKGS := libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6 libglib2.0-0 ffmpeg chromium chromium-driver
DOMAIN := sim robot agents vlm buffer calibration
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl

.PHONY: setup test lint typecheck pytest demo bench clean-venv mutation mutation-rerun

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt Makefile
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@test -x $(PY) || python3.11 -m venv .venv || python3 -m venv .venv
	$(PIP) install -q -U pip setuptools wheel
	$(PIP) install -q -c constraints.txt -e '.[dev,scale]'
	@# lerobot 0.4.4 pins torch<2.11 and huggingface-hub<0.36, which clash with transformers 5;
	@# its runtime needs come from the [robot] extra above, so it goes in without its own pins.
	$(PIP) install -q --no-deps -c constraints.txt lerobot==0.4.4
	@touch $(STAMP)

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

typecheck: setup
	.venv/bin/mypy $(DOMAIN)

pytest: setup
	$(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# `make demo`: a policy a real SO-101 can run (joints + front camera), trained on the twin's reach task with the
# deployable recipe (about 6 minutes on 2 cores), then deployed on the twin through the safety layer.
DEMO_RUN := runs/demo-$(shell date +%Y%m%d-%H%M%S)
demo: setup
	.venv/bin/vlmrl train --recipe deployable --sim.task reach --run-dir $(DEMO_RUN)
	.venv/bin/vlmrl deploy --policy $(DEMO_RUN)/policy.pt --episodes 3 --out-dir $(DEMO_RUN)/deploy

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b --quick --json runs/bench/$$(basename $$b .py).json || exit 1; done

clean-venv:
	rm -rf .venv

# Mutation testing (mutmut 3, outside `make test`): tools/mutation.py mutates, group by group, the modules
# that decide what is learned, each in a scratch copy ($(MUTATION_DIR)/<group>) against the fast tests
# that guard it; it prints a score per module and writes results/mutation/<group>.json (docs/mutation.md).
# `make mutation MUTATION_GROUPS="sac safety"` runs a subset; `make mutation-rerun` re-tests only the last
# run's survivors and timeouts with today's tests; `cd $(MUTATION_DIR)/<group> && $(CURDIR)/.venv/bin/mutmut
# results` lists the survivors.
MUTATION_GROUPS ?= samplers replay sac safety learner tasks randomization iql offline scoring_worker reward_checker frame_checks integrity zarr_commit
MUTATION_DIR ?= /tmp/vlmrl-mutation
MUTATION_JOBS ?= 1
mutation: setup
	$(PY) tools/mutation.py --jobs $(MUTATION_JOBS) --scratch $(MUTATION_DIR) $(MUTATION_GROUPS)
mutation-rerun: setup
	$(PY) tools/mutation.py --rerun --jobs $(MUTATION_JOBS) --scratch $(MUTATION_DIR) $(MUTATION_GROUPS)

