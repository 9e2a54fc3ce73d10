"""lab.run prints which p4sim pieces its switch runs, read from p4sim-switch's start line."""

from lab.run import switch_profile

START = (
    "p4sim-switch: device 1 serving P4Runtime on 127.0.0.1:40405 (2 interface(s), clock wall,"
    " profile fast (compiled backend, compiled write path, native front end))"
)


def test_the_start_lines_profile_is_named():
    log = "p4sim: building ...\n" + START + "\nlater line\n"
    assert (
        switch_profile(log)
        == "profile fast (compiled backend, compiled write path, native front end)"
    )
    ref = START.replace(
        "profile fast (compiled backend, compiled write path, native front end)",
        "profile reference (python backend, python write path, grpc-python front end)",
    )
    assert (
        switch_profile(ref)
        == "profile reference (python backend, python write path, grpc-python front end)"
    )


def test_a_switch_naming_no_profile_gives_nothing():
    assert (
        switch_profile(
            "Calling target program-options parser\nServer listening on 127.0.0.1:9559\n"
        )
        == ""
    )
