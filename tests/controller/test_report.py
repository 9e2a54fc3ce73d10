"""The scenario report's text table and plot binning (no simulation needed)."""

from __future__ import annotations

from controller.scenarios.report import _binned, table


def test_table_right_aligns_number_columns_and_left_aligns_text():
    text = table([["h1->h3", "4.620", "PASS", "8.94 Gb/s of 9.26"],
                  ["h2->h3", "14.3", "FAIL", "queue 3 pkts"]],
                 ["flow", "Gb/s", "result", "detail"])
    lines = text.splitlines()
    assert lines[0] == "flow     Gb/s  result  detail"
    assert lines[1] == "------  -----  ------  -----------------"
    # numbers line up on their last digit; text (and a mixed text column) starts flush left
    assert lines[2] == "h1->h3  4.620  PASS    8.94 Gb/s of 9.26"
    assert lines[3] == "h2->h3   14.3  FAIL    queue 3 pkts"
    assert all(line == line.rstrip() for line in lines)


def test_binned_sums_samples_into_fixed_bins_with_empty_bins_kept():
    t_us = [5, 10, 95, 100, 105, 310]
    x, y = _binned(t_us, [1, 2, 3, 4, 0, 7], 100)
    assert x == [0, 100, 200, 300] and y == [6, 4, 0, 7]
    assert _binned([], [], 100) == ([], [])
