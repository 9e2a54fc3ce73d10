"""Scenario schema limits, one value on each side (validate() directly, nothing runs).
The limits are the ones schema.py documents, typed in here: at most 64 flows, 100,000
samples, 100,000 messages per flow, 16 sweep points; a flow joins two different hosts,
starts inside the run, posts messages no larger than its total; ACK coalescing no larger
than the window; drop rates in [0, 0.5]; whole numbers where a count is asked for."""

from __future__ import annotations

import copy

import pytest

from controller.scenarios.scenario import load_scenario
from controller.scenarios.schema import ScenarioError, validate

BASE = load_scenario("lossy")


def sc_with(**top) -> dict:
    sc = copy.deepcopy(BASE)
    sc.update(top)
    return sc


def flow(**kw) -> dict:
    return {"src": "h1", "dst": "h2", "op": "WRITE", "bytes": "1GB", "message": "1MB", **kw}


def bad(sc: dict, key: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        validate(sc)
    assert exc.value.key.endswith(key), exc.value


def test_base_is_valid():
    validate(copy.deepcopy(BASE))


def test_flow_count_limit():
    validate(sc_with(flows=[flow()] * 64))  # the documented limit, typed in (not read back)
    bad(sc_with(flows=[flow()] * 65), "flows")


def test_sample_count_limit():
    validate(sc_with(duration_us=200_000, sample_us=2))  # 100,000 samples
    bad(sc_with(duration_us=200_000, sample_us=1.9), "sample_us")


def test_message_count_limit():
    validate(sc_with(flows=[flow(bytes=10**9, message=10**4)]))  # 100,000 messages
    bad(sc_with(flows=[flow(bytes=10**9, message=9_999)]), "flows[0].message")


def test_flow_between_two_hosts():
    bad(sc_with(flows=[flow(dst="h1")]), "flows[0].dst")


def test_message_no_larger_than_the_flow():
    validate(sc_with(flows=[flow(bytes=1000, message=1000)]))
    bad(sc_with(flows=[flow(bytes=1000, message=1001)]), "flows[0].message")


def test_ack_every_at_most_the_window():
    nic = {**BASE["nic"], "window": 64}
    validate(sc_with(nic={**nic, "ack_every": 64}))
    bad(sc_with(nic={**nic, "ack_every": 65}), "nic.ack_every")


def test_flow_starts_inside_the_run():
    validate(sc_with(flows=[flow(start_us=12_000)]))
    bad(sc_with(flows=[flow(start_us=12_001)]), "flows[0].start_us")


def test_sweep_point_count_and_range():
    validate(sc_with(sweep={"drop_rate": [0.0] * 16}))
    bad(sc_with(sweep={"drop_rate": [0.0] * 17}), "sweep.drop_rate")
    validate(sc_with(sweep={"drop_rate": [0, 0.5]}))
    bad(sc_with(sweep={"drop_rate": [0, 0.6]}), "sweep.drop_rate[1]")


def test_counts_are_whole_numbers():
    bad(sc_with(nic={**BASE["nic"], "window": 1.5}), "nic.window")


def test_watched_port_must_be_a_switch_port():
    validate(sc_with(watch={"port": 9, "class": 3}))
    bad(sc_with(watch={"port": 5, "class": 3}), "watch.port")


def test_link_speed_range():  # types.LinkSpeed: 1 Mb/s .. 1.6 Tb/s, units as the switch config
    validate(sc_with(link={"speed": "1M"}))
    validate(sc_with(link={"speed": "1.6T"}))
    bad(sc_with(link={"speed": "999k"}), "link.speed")
    bad(sc_with(link={"speed": "1.7T"}), "link.speed")


def test_flow_sizes_are_positive():  # types.PositiveSize: 0 would post nothing
    validate(sc_with(flows=[flow(bytes=1, message=1)]))
    bad(sc_with(flows=[flow(bytes="0KB")]), "flows[0].bytes")
    bad(sc_with(flows=[flow(message="0 pkts")]), "flows[0].message")


def test_sweep_needs_a_point():
    validate(sc_with(sweep={"drop_rate": [0.1]}))
    bad(sc_with(sweep={"drop_rate": []}), "sweep.drop_rate")


def test_duration_override_has_the_files_type():  # rocelab run --duration-us, typed as duration_us
    validate(sc_with(flows=[flow()]), duration_us=200_000)
    for value in (0, 200_001, float("nan"), "5", True):
        with pytest.raises(ScenarioError) as exc:
            validate(sc_with(flows=[flow()]), duration_us=value)
        assert exc.value.key.endswith("--duration-us"), exc.value
