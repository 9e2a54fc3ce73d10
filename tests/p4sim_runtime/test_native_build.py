"""The native front end's build key covers every source file. frontend.cc is one translation
unit that includes its parts (state.h, transport.h, ...): an edit to any of them must give
another key, so the cached module is rebuilt (a key of frontend.cc alone would load a stale
module after a part changed). No compiler run: the key and the sources only."""

from __future__ import annotations

import re

from p4sim.server.native import build

TOOLCHAIN = ("g++", "g++ (Debian 12.2.0-14) 12.2.0", "-std=c++17", "-O2")


def test_every_included_part_is_a_source_and_every_source_is_included() -> None:
    srcs = build.sources()
    included = {m for text in srcs.values() for m in re.findall(r'^#include "([^"]+)"', text, re.M)}
    assert build.MAIN in srcs and len(srcs) > 1
    assert included <= set(srcs), (
        "a part frontend.cc includes is not hashed nor copied into the build"
    )
    assert set(srcs) - {build.MAIN} <= included, "a source no translation unit includes"


def test_an_edit_to_any_source_changes_the_build_key() -> None:
    srcs = build.sources()
    key = build.build_key(srcs, TOOLCHAIN)
    assert build.build_key(dict(srcs), TOOLCHAIN) == key
    for name, text in srcs.items():
        assert build.build_key({**srcs, name: text + "\n"}, TOOLCHAIN) != key, name
    a, b = sorted(srcs)[:2]  # text moved from one file to the next is another build too
    assert build.build_key({**srcs, a: srcs[a] + srcs[b][:1], b: srcs[b][1:]}, TOOLCHAIN) != key
    assert build.build_key(srcs, (*TOOLCHAIN, "-g")) != key
