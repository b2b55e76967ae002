# vlmrl: `make demo` runs the main job, `make test` runs every check.  Both set up the venv first.
SHELL := /bin/bash
PY := .venv/bin/python
PIP := .venv/bin/pip
STAMP := .venv/.setup-stamp
APT_PKGS := libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6 libglib2.0-0 ffmpeg
DOMAIN := sim robot agents vlm buffer calibration
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl

.PHONY: setup test lint typecheck pytest demo bench clean-venv mutation

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

demo: setup
	.venv/bin/vlmrl train --demo

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b --quick --json runs/bench/$$(basename $$b .py).json || exit 1; done

clean-venv:
	rm -rf .venv

# Mutation testing (mutmut 3, outside `make test`): each group mutates one module that decides what is
# learned and runs the tests that guard it, in a scratch copy of the tree ($(MUTATION_DIR)/<group>).
# `make mutation MUTATION_GROUPS="samplers sac"` runs a subset; `cd $(MUTATION_DIR)/<group> &&
# $(CURDIR)/.venv/bin/mutmut results` lists the survivors. Scores of the last run are in the README.
MUTATION_GROUPS ?= samplers replay sac safety learner
MUTATION_DIR ?= /tmp/vlmrl-mutation
MUTATION_JOBS ?= 2
mutation: setup
	@for group in $(MUTATION_GROUPS); do \
	  case $$group in \
	    samplers) src=buffer; only=buffer/samplers/*; tests="tests/buffer/test_samplers.py tests/buffer/test_sum_tree_property.py tests/buffer/test_priorities_through_the_buffer.py";; \
	    replay) src=buffer; only=buffer/replay_buffer.py; tests="tests/buffer/test_contract.py tests/buffer/test_priorities_through_the_buffer.py";; \
	    sac) src=agents; only=agents/sac.py; tests="tests/agents/test_sac.py";; \
	    safety) src=robot; only=robot/safety.py; tests="tests/robot/test_safety.py tests/robot/test_serial_bus.py";; \
	    learner) src=vlmrl; only=vlmrl/learner.py; tests="tests/buffer/test_priorities_in_a_trained_run.py tests/vlmrl/test_train.py";; \
	    *) echo "unknown mutation group $$group (samplers replay sac safety learner)"; exit 2;; \
	  esac; \
	  dir=$(MUTATION_DIR)/$$group; rm -rf $$dir; mkdir -p $$dir; \
	  tar --exclude=./.venv --exclude=./.git --exclude=./runs --exclude=./results --exclude=./.mypy_cache -cf - . | tar -xf - -C $$dir; \
	  { echo; echo "[tool.mutmut]"; echo "source_paths = [\"$$src\"]"; echo "only_mutate = [\"$$only\"]"; \
	    echo "pytest_add_cli_args_test_selection = [$$(printf '"%s", ' $$tests)]"; \
	    echo 'also_copy = ["tests", "agents", "sim", "robot", "vlm", "vlmrl", "calibration", "buffer"]'; \
	    echo 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-x", "-q"]'; \
	    echo "use_git_change_detection = false"; } >> $$dir/pyproject.toml; \
	  echo "== mutation group $$group: $$only"; \
	  (cd $$dir && OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(CURDIR)/.venv/bin/mutmut run --max-children $(MUTATION_JOBS) >/dev/null 2>&1; \
	   $(CURDIR)/.venv/bin/mutmut results --all true 2>/dev/null | awk '{n[$$NF]++} END {k = n["killed"]; s = n["survived"]; \
	     printf "killed %d, survived %d, not covered %d, timeout %d: score %.0f%% of covered mutants\n", \
	     k, s, n["tests"], n["timeout"], (k + s) ? 100 * k / (k + s) : 0}'); \
	done

