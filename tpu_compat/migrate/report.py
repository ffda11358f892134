"""Scan and upgrade results as text, JSON and SARIF 2.1.0 (strings, no I/O).

Formats:

* text: one ``path:line:col: TPC###  message`` line per finding, like a linter;
* JSON: ``{"files_scanned", "findings": [...], "errors": [...]}`` (see
  docs/migration.md for the schema);
* SARIF 2.1.0: one run whose ``tool.driver.rules`` is the table of legacy
  APIs, for code-scanning services that show findings inline;
* the upgrade report: a text file in the layout of ``tf_upgrade_v2``'s
  report.txt (header, per-file issues, detailed log), or JSON.
"""

import json
import os
import urllib.parse

from tpu_compat import legacy_api
from tpu_compat._version import __version__
from tpu_compat.migrate import scan

__all__ = [
    "RULES_BEGIN",
    "RULES_END",
    "rules_markdown",
    "scan_json",
    "scan_sarif",
    "scan_text",
    "update_rules_block",
    "legacy_free",
    "legacy_left",
    "upgrade_json",
    "upgrade_text",
]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "tpu-compat"

# --- scan ----------------------------------------------------------------------------


def finding_line(finding):
    return f"{finding.location()}: {finding.rule}  {finding.message()}"


def scan_text(result):
    """Findings, one per line (errors are for the caller to put on stderr)."""
    return "".join(finding_line(f) + "\n" for f in result.findings)


def error_line(error):
    return f"{error.path}: error: {error.message}"


def scan_summary(result):
    high = sum(1 for f in result.findings if f.confidence == scan.HIGH)
    low = len(result.findings) - high
    text = (f"{len(result.findings)} findings ({high} high, {low} low confidence) "
            f"in {result.files_scanned} files scanned")
    if result.errors:
        text += f"; {len(result.errors)} files could not be scanned"
    return text


def scan_json(result):
    return json.dumps(result.to_dict(), indent=2) + "\n"


def _uri(path):
    """A SARIF artifact URI: relative paths stay relative (to %SRCROOT%)."""
    posix = path.replace(os.sep, "/")
    if os.path.isabs(path):
        return "file://" + urllib.parse.quote(posix)
    return urllib.parse.quote(posix)


def _sarif_rule(record):
    return {
        "id": record.rule,
        "name": record.name,
        "shortDescription": {"text": record.api},
        "fullDescription": {"text": f"{record.api} ({record.era_text()}): "
                                    f"use {record.replacement}. {record.note}".strip()},
        "help": {"text": f"Replace with {record.replacement}."
                         + (" `tpu-compat upgrade` rewrites it." if record.autofix
                            else " Needs a manual change.")},
        "defaultConfiguration": {"level": "warning"},
        "properties": {
            "eras": list(record.eras),
            "removedIn": record.removed_in,
            "autofix": record.autofix,
            "tags": ["tensorflow", "tpu", "migration"],
        },
    }


def _location(path, line, column=None):
    physical = {"artifactLocation": {"uri": _uri(path)}}
    if not os.path.isabs(path):
        physical["artifactLocation"]["uriBaseId"] = "%SRCROOT%"
    if line:
        physical["region"] = {"startLine": line}
        if column:
            physical["region"]["startColumn"] = column
    return {"physicalLocation": physical}


def scan_sarif(result):
    rule_index = {record.rule: index for index, record in enumerate(legacy_api.RECORDS)}
    results = []
    for finding in result.findings:
        message = finding.message()
        if finding.cell is not None:
            message = f"cell {finding.cell}: {message}"
        entry = {
            "ruleId": finding.rule,
            "ruleIndex": rule_index[finding.rule],
            "level": "warning" if finding.confidence == scan.HIGH else "note",
            "message": {"text": message},
            "locations": [_location(finding.path, finding.line, finding.column)],
            "properties": {"confidence": finding.confidence, "autofix": finding.autofix,
                           "era": finding.era},
        }
        if finding.cell is not None:
            entry["properties"]["cell"] = finding.cell
        results.append(entry)
    notifications = [{
        "level": "error",
        "message": {"text": error.message},
        "locations": [_location(error.path, None)],
    } for error in result.errors]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": TOOL_NAME,
                "version": __version__,
                "rules": [_sarif_rule(record) for record in legacy_api.RECORDS],
            }},
            # Our columns count characters, as libcst and editors do.
            "columnKind": "unicodeCodePoints",
            "invocations": [{"executionSuccessful": True,
                             "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


# --- upgrade -------------------------------------------------------------------------

_SEVERITY = {"rewritten": "INFO", "todo": "WARNING", "reported": "WARNING"}
_VERB = {
    "rewritten": "Rewrote",
    "todo": "Added a TODO for",
    "reported": "Left unchanged",
}


def _outcome_text(outcome):
    finding = outcome.finding
    cell = f"cell {finding.cell}: " if finding.cell is not None else ""
    detail = f" ({outcome.detail})" if outcome.detail else ""
    return (f"{cell}{finding.rule}: {_VERB[outcome.action]} {finding.api}; "
            f"modern form: {finding.replacement}{detail}")


def legacy_left(upgrade):
    """How many legacy uses a file's result still holds (TODOs and findings left)."""
    return sum(1 for outcome in upgrade.outcomes if outcome.action != "rewritten")


def legacy_free(upgrade):
    """Whether a file's result is expected to run with no legacy API: it was
    upgraded and every finding rewritten. None when it could not be upgraded."""
    return None if upgrade.error is not None else legacy_left(upgrade) == 0


def attention_count(files):
    """Issues that need a person: TODOs, unrewritten findings and file errors."""
    return sum(1 for upgrade in files for outcome in upgrade.outcomes
               if outcome.action != "rewritten") + sum(1 for u in files if u.error)


def _legacy_free_line(upgrade):
    left = legacy_left(upgrade)
    if not left:
        return "Expected to run with no legacy API: yes"
    return f"Expected to run with no legacy API: no ({left} legacy use{'s' * (left != 1)} left)"


def upgrade_text(files, outputs):
    """The report in tf_upgrade_v2's layout. ``outputs`` maps path -> output path."""
    dashes = "-" * 80
    converted = sum(1 for upgrade in files if upgrade.error is None)
    changed = sum(1 for upgrade in files if upgrade.changed)
    lines = [
        "tpu_compat upgrade report",
        "-------------------------",
        f"Converted {converted} files",
        f"Changed {changed} files",
        f"Detected {attention_count(files)} issues that require attention",
        f"Expected to run with no legacy API: {sum(1 for u in files if legacy_free(u))} of "
        f"{converted} files",
        dashes,
    ]
    for upgrade in files:
        issues = [o for o in upgrade.outcomes if o.action != "rewritten"]
        if not issues and upgrade.error is None:
            continue
        lines += [dashes, f"File: {upgrade.path}", dashes]
        if upgrade.error is not None:
            lines.append(f"{upgrade.path}:0:0: ERROR: {upgrade.error.message}")
        for outcome in issues:
            finding = outcome.finding
            lines.append(f"{finding.location()}: {_SEVERITY[outcome.action]}: "
                         f"{_outcome_text(outcome)}")
    lines += ["", "=" * 80, "Detailed log follows:", "", "=" * 80]
    for upgrade in files:
        lines += [dashes, f"Processing file '{upgrade.path}'",
                  f" outputting to '{outputs.get(upgrade.path, upgrade.path)}'", dashes, ""]
        if upgrade.error is not None:
            lines.append(f"0:0: ERROR: {upgrade.error.message}")
        else:
            lines.append(_legacy_free_line(upgrade))
        for outcome in upgrade.outcomes:
            finding = outcome.finding
            lines.append(f"{finding.line}:{finding.column}: {_SEVERITY[outcome.action]}: "
                         f"{_outcome_text(outcome)}")
        lines.append("")
    return "\n".join(lines) + "\n"


def upgrade_json(files, outputs):
    data = {
        "files_converted": sum(1 for upgrade in files if upgrade.error is None),
        "files_changed": sum(1 for upgrade in files if upgrade.changed),
        "issues_requiring_attention": attention_count(files),
        "files": [{
            "path": upgrade.path,
            "output": outputs.get(upgrade.path, upgrade.path),
            "changed": upgrade.changed,
            "legacy_free": legacy_free(upgrade),
            "legacy_left": legacy_left(upgrade),
        } for upgrade in files],
        "findings": [outcome.to_dict() for upgrade in files for outcome in upgrade.outcomes],
        "errors": [upgrade.error.to_dict() for upgrade in files if upgrade.error is not None],
    }
    return json.dumps(data, indent=2) + "\n"


# --- docs ----------------------------------------------------------------------------

RULES_BEGIN = "<!-- rules:begin (generated from tpu_compat/legacy_api.py) -->"
RULES_END = "<!-- rules:end -->"


def rules_markdown():
    """The rule table of docs/migration.md, generated from the table of legacy APIs."""
    lines = ["| rule | legacy API | kind | eras | replacement | autofix |",
             "|---|---|---|---|---|---|"]
    for record in legacy_api.RECORDS:
        replacement = record.replacement.replace("|", "\\|")
        lines.append(f"| {record.rule} | `{record.api}` | {record.kind} | "
                     f"{record.era_text()} | {replacement} | "
                     f"{'yes' if record.autofix else 'no (TODO comment)'} |")
    return "\n".join(lines) + "\n"


def replace_rules_block(document):
    """``document`` with the text between the rule markers regenerated."""
    before, begin, rest = document.partition(RULES_BEGIN)
    _, end, after = rest.partition(RULES_END)
    if not begin or not end:
        raise ValueError(f"markers {RULES_BEGIN!r} / {RULES_END!r} not found")
    return f"{before}{RULES_BEGIN}\n{rules_markdown()}{RULES_END}{after}"


def update_rules_block(path):
    """Regenerates the rule table in the markdown file at ``path``."""
    with open(path, encoding="utf-8") as stream:
        document = stream.read()
    updated = replace_rules_block(document)
    if updated != document:
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(updated)
    return updated != document
