"""README.md's configuration table, generated from the settings table.

``python scripts/settings_table.py`` rewrites the table between the markers
below; ``tests/test_settings.py`` fails, naming that command, when it is stale.
"""

from tpu_compat import settings

__all__ = ["README_BEGIN", "README_END", "markdown_table", "with_readme_table"]

README_BEGIN = ("<!-- settings table: generated from tpu_compat/settings_rows.py; do not edit. "
                "Regenerate with: python scripts/settings_table.py -->")
README_END = "<!-- end of settings table -->"


def _flags_cell(setting):
    cells = []
    if setting.flag:
        commands = [command for entry in setting.flag_entries
                    for command in settings.COMMANDS[entry]]
        cells.append(f"`{setting.flag}` ({', '.join(f'`{c}`' for c in commands)})")
    if setting.pytest_option:
        cells.append(f"pytest `{setting.pytest_option}`")
    return "; ".join(cells) or "—"


def markdown_table():
    """README.md's configuration table, one line per row, with its markers."""
    lines = [README_BEGIN,
             "| variable | flag | values | default | meaning |",
             "|---|---|---|---|---|"]
    for setting in settings.ROWS:
        lines.append(f"| `{setting.variable}` | {_flags_cell(setting)} | {setting.values} | "
                     f"{setting.defaults_sentence()} | {setting.meaning} |")
    lines.append(README_END)
    return "\n".join(lines) + "\n"


def with_readme_table(text):
    """``text`` (README.md) with its table between the markers regenerated."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md lacks the markers {README_BEGIN!r} ... {README_END!r}")
    return text[:start] + markdown_table() + text[end + len(README_END) + 1:]
