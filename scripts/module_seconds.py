"""Writes tests/module_seconds.json from a pytest JUnit XML report.

The suite's xdist workers take whole modules, the costliest first
(tests/module_order.py); this measures the costs. Run the README's test
command with a report, then this script on it:

    TF_CPP_MIN_LOG_LEVEL=2 python -m pytest -n 2 -m "not slow" --junitxml=/tmp/suite.xml
    python scripts/module_seconds.py /tmp/suite.xml

A test's seconds are its setup, call and teardown, as the report gives them;
a module's are the sum of its tests'. Rounded to tenths: the file orders the
run, it does not need more.
"""

import argparse
import collections
import json
import os
import sys
import xml.etree.ElementTree as ElementTree

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests"))
import module_order  # noqa: E402  pylint: disable=wrong-import-position

from tpu_compat._atomic import atomic_write  # noqa: E402  pylint: disable=wrong-import-position


def module_path(classname):
    """``tests/test_x.py`` of a JUnit classname ``tests.test_x`` (or
    ``tests.test_x.TestClass``)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = os.path.join(*parts[:end]) + ".py"
        if os.path.isfile(os.path.join(REPO_ROOT, candidate)):
            return candidate.replace(os.sep, "/")
    raise ValueError(f"no module of the repository for JUnit classname {classname!r}")


def seconds_by_module(report_path):
    seconds = collections.Counter()
    for case in ElementTree.parse(report_path).getroot().iter("testcase"):
        seconds[module_path(case.get("classname"))] += float(case.get("time", 0))
    return {module: round(value, 1) for module, value in sorted(seconds.items())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a pytest --junitxml report of the suite")
    parser.add_argument("--output", default=module_order.SECONDS_FILE,
                        help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)
    seconds = seconds_by_module(args.report)
    if not seconds:
        parser.error(f"report={args.report!r} has no test cases")
    atomic_write(args.output, (json.dumps(seconds, indent=1, sort_keys=True) + "\n").encode())
    print(f"module_seconds: {len(seconds)} modules, {sum(seconds.values()):.0f} s, "
          f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
