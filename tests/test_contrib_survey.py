"""The contrib survey (docs/contrib_survey.md) against what tpu_compat serves.

Every surveyed name the survey proposes to serve as a data row is served by a
record of the table; every surveyed name not served has its one-line reason
in docs/migration.md; the deep import paths tpu_compat aliases are ones the
survey found.
"""

import json

import pytest

from tpu_compat import contrib as contrib_lib
from tpu_compat.contrib import _survey_docs

with open(_survey_docs.SURVEY, encoding="utf-8") as _stream:
    SURVEY = json.load(_stream)
ROWS = [row for row in SURVEY["names"] if row["action"] in _survey_docs.LISTED_ACTIONS]


def _migration():
    with open(_survey_docs.MIGRATION, encoding="utf-8") as stream:
        return stream.read()


def test_migration_list_is_generated_from_the_survey():
    document = _migration()
    start = document.index(_survey_docs.BEGIN)
    end = document.index(_survey_docs.END) + len(_survey_docs.END)
    assert document[start:end] == _survey_docs.block(SURVEY), (
        "docs/migration.md's surveyed-names list is stale; regenerate it with: "
        "python -m tpu_compat.contrib._survey_docs")


@pytest.mark.parametrize("name", [row["name"] for row in SURVEY["names"]
                                  if row["action"] in ("serve as data row", "served")])
def test_every_name_to_serve_as_a_data_row_is_served(name):
    assert _survey_docs.served_by(name) is not None, name


@pytest.mark.parametrize("row", ROWS, ids=[row["name"] for row in ROWS])
def test_every_name_left_out_has_its_reason_in_migration_md(row):
    if _survey_docs.served_by(row["name"]) is not None:
        return
    lines = [line for line in _migration().splitlines()
             if line.startswith(f"* `{row['name']}` (")]
    assert len(lines) == 1, row["name"]
    assert lines[0].split("): ", 1)[1].strip(), row["name"]


def test_the_served_deep_import_paths_are_surveyed_ones():
    surveyed = {row["name"] for row in SURVEY["deep_imports"]}
    for module, names in contrib_lib.DEEP_IMPORTS.items():
        assert module in surveyed, module
        assert any(f"{module}.{name}" in surveyed for name in names), module


def test_the_top_blocking_names_are_served():
    """The survey's blockers of issue 22 item 1, named by the issue."""
    for name in ("tf.contrib.data.AUTOTUNE", "tf.contrib.keras",
                 "tf.contrib.distribute.initialize_tpu_system"):
        assert _survey_docs.served_by(name) is not None, name
