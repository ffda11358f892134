"""The order the suite's xdist workers take its modules in: the costliest first.

The module a worker starts last decides how long the other waits idle at the
end (longest-processing-time-first scheduling): with the cheap modules last,
the two workers end within seconds of each other. xdist's default ``load``
scheduling hands the tests out in collection order, so ordering the items is
enough. (xdist's ``loadscope``, whole modules to a worker, was tried: after a
worker crashed, its replacement got no work and the run waited forever.)

The costs are measured, not declared: ``tests/module_seconds.json`` holds
each module's seconds in a run of the README's test command, written by
``python scripts/module_seconds.py JUNIT_XML`` (pytest ``--junitxml``). A
module missing from it counts as cheap. The file only orders the run: a stale
entry costs time, never a result.
"""

import json
import os

SECONDS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_seconds.json")


def module_of(nodeid):
    """``tests/test_x.py`` of ``tests/test_x.py::test_y[case]``."""
    return nodeid.split("::", 1)[0]


def load_seconds(path=SECONDS_FILE):
    """``{module path: seconds}``; empty when the file is missing."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


def costliest_modules_first(items, seconds):
    """Reorders ``items`` in place: modules by measured seconds, most first.

    A module's tests keep their order and stay together (pytest sets a module
    fixture up again when its tests are interleaved with another module's).
    """
    first_seen = {}
    for index, item in enumerate(items):
        first_seen.setdefault(module_of(item.nodeid), index)
    items.sort(key=lambda item: (-seconds.get(module_of(item.nodeid), 0.0),
                                 first_seen[module_of(item.nodeid)]))
