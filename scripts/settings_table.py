#!/usr/bin/env python3
"""Regenerate README.md's configuration table from tpu_compat/settings_rows.py.

The table sits between the markers ``settings_docs.README_BEGIN`` and
``settings_docs.README_END``; everything else in README.md is left as it is.

    python scripts/settings_table.py            # rewrite README.md's table
    python scripts/settings_table.py --check    # exit 1 if it is stale
"""

import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tpu_compat import settings_docs  # noqa: E402  pylint: disable=wrong-import-position


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", default=os.path.join(REPO, "README.md"),
                        help="the README to update (default: the checkout's)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the table is stale")
    args = parser.parse_args(argv)
    with open(args.readme, encoding="utf-8") as handle:
        text = handle.read()
    updated = settings_docs.with_readme_table(text)
    if args.check:
        if updated != text:
            print(f"{args.readme}: the settings table is stale; regenerate it with: "
                  f"python scripts/settings_table.py", file=sys.stderr)
            return 1
        return 0
    if updated != text:
        with open(args.readme, "w", encoding="utf-8") as handle:
            handle.write(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
