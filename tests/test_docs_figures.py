"""The figures quoted in the docs agree with the measured tables they come from.

docs/performance.md holds every benchmark's table (pasted from the benchmark's
output) and the ratios quoted from it. These checks recompute each quoted
ratio from the table rows it names, so re-measuring a table without updating
its prose (or the reverse) fails; and every ratio quoted anywhere else in the
docs must appear in docs/performance.md, so no second copy drifts.
Tests never time anything: they read text.
"""

import glob
import os
import re

import pytest

from conftest import REPO_ROOT

PERFORMANCE = os.path.join(REPO_ROOT, "docs", "performance.md")


def _sections(text):
    """``{heading: body}`` of the ``## `` sections."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {heading.strip(): body for heading, body in zip(parts[1::2], parts[2::2])}


def _number(cell):
    try:
        return float(cell.replace(",", "").strip())
    except ValueError:
        return None


def _rows(body):
    """``(label, first number)`` of each table row of a section."""
    rows = []
    for line in body.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2:
            continue
        numbers = [n for n in map(_number, cells[1:]) if n is not None]
        if numbers:
            rows.append((cells[0], numbers[0]))
    return rows


def _row(body, prefix, in_label=None):
    """The number of the one row whose label starts with ``prefix``; or, with
    ``in_label`` (a regex with one group), the number it finds in the label."""
    found = [(label, value) for label, value in _rows(body) if label.startswith(prefix)]
    assert len(found) == 1, f"{len(found)} table rows start with {prefix!r}"
    label, value = found[0]
    if in_label is None:
        return value
    match = re.search(in_label, label)
    assert match, f"{in_label!r} not in the label {label!r}"
    return float(match.group(1))


# (section heading starts with, regex capturing the quoted figure,
#  how the figure follows from the table: rows by label prefix)
QUOTED = [
    ("steps_per_run", r"\(a\)/\(c\) time ratio \*\*([\d.]+)\*\*",
     lambda r: r("(a) ") / r("(c) ")),
    ("steps_per_run", r"\*\*([\d.]+)\*\* like for like against \(c'\)",
     lambda r: r("(a) ") / r("(c') ")),
    ("steps_per_run", r"\(a\) beats \(b\) by \*\*([\d.]+)x\*\*",
     lambda r: r("(b) ") / r("(a) ")),
    ("steps_per_run", r"against ([\d.]+)x for \(c\) over \(b\)",
     lambda r: r("(b) ") / r("(c) ")),
    # (d) ran in its own process, beside a (c') whose time its label gives.
    ("steps_per_run", r"\(d\) \*\*([\d.]+)x\*\* slower",
     lambda r: r("(d) ") / r("(d) ", in_label=r"\(c'\) there: ([\d.]+)")),
    ("experimental_run_v2 overhead", r"Eager ratio \*\*([\d.]+)\*\*",
     lambda r: r("(i) eager: `adapter") / r("(i) eager: native")),
    ("experimental_run_v2 overhead", r"Traced ratio \*\*([\d.]+)\*\*",
     lambda r: r("(ii) in one `tf.function` loop: `adapter")
     / r("(ii) in one `tf.function` loop: native")),
    # Keras fit's (a)/(b) is the median of paired processes' ratios
    # (bench_keras_fit.py), not a ratio of the table's medians: not derived here.
    ("Keras fit", r"\(a\) beats \(c\) by \*\*([\d.]+)x\*\*", lambda r: r("(a) ") / r("(c) ")),
    ("Keras fit", r"`steps_per_run=50` gains ([\d.]+)x", lambda r: r("(g50) ") / r("(g1) ")),
    ("mixed_bfloat16 fit", r"\(a\)/\(b\) = \*\*([\d.]+)\*\*", lambda r: r("(a) ") / r("(b) ")),
    ("tpu.replicate", r"\(b\)/\(a\) = \*\*([\d.]+)\*\*", lambda r: r("(b) ") / r("(a) ")),
    ("TPUEstimator", r"steady-state throughput \*\*([\d.]+)x\*\*",
     lambda r: r("(a) ") / r("(c) ")),
    ("TPUEstimator", r"\(a\)/\(b\) \*\*([\d.]+)x\*\*", lambda r: r("(a) ") / r("(b) ")),
    ("Fidelity tpu", r"Fidelity `tpu` costs (-?[\d.]+) % of the whole",
     lambda r: 100 * (r("fidelity `tpu`") - r("fidelity `cpu`")) / r("fidelity `cpu`")),
    ("Fidelity tpu", r"of\nwhich the check itself is ([\d.]+) %",
     lambda r: 100 * r("`fidelity.check_ops` alone") / r("fidelity `cpu`")),
    ("Emulated pod slice", r"\(b\)/\(a\) time ratio \*\*([\d.]+)\*\*",
     lambda r: r("(b) ") / r("(a) ")),
    ("Emulated pod slice", r"\(a\)/\(c\) \*\*([\d.]+)\*\*", lambda r: r("(a) ") / r("(c) ")),
    # The table has seconds per 100 steps, the prose milliseconds per step.
    ("Emulated pod slice", r"machine\): \*\*([\d.]+) ms\*\*",
     lambda r: 10 * (r("(b) ") - r("(a) "))),
    ("Emulated pod slice", r"takes ([\d.]+) ms on one host", lambda r: 10 * r("(r1) ")),
    ("Emulated pod slice", r"ms on one host and ([\d.]+) ms on two", lambda r: 10 * r("(r2) ")),
    ("Emulated pod slice", r"per step\) add\s+([\d.]+) ms",
     lambda r: 10 * (r("(r2) ") - r("(r1) "))),
    # Against native MultiWorkerMirroredStrategy: steps/s, so (m)'s time over (b)'s.
    ("Emulated pod slice", r"\(b\) runs at \*\*([\d.]+)x\*\*\s+the steps/s of \(m\)",
     lambda r: r("(m) ") / r("(b) ")),
    ("Emulated pod slice", r"\(b2\) at ([\d.]+)x", lambda r: r("(m) ") / r("(b2) ")),
    ("Emulated pod slice", r"cost ([\d.]+) times `ReductionToOneDevice`",
     lambda r: r("`CollectiveAllReduce` RING over") / r("`ReductionToOneDevice` (what")),
]


def _agrees(quoted_text, computed):
    """Equal at the quoted precision, allowing for the table's own rounding (1 %)."""
    decimals = len(quoted_text.partition(".")[2])
    half_unit = 0.5 * 10 ** -decimals
    return abs(float(quoted_text) - computed) <= half_unit + 0.01 * abs(computed)


@pytest.mark.parametrize("section,pattern,formula", QUOTED,
                         ids=[f"{s}: {p}" for s, p, _ in QUOTED])
def test_quoted_ratio_follows_from_its_table(section, pattern, formula):
    with open(PERFORMANCE, encoding="utf-8") as handle:
        sections = _sections(handle.read())
    headings = [h for h in sections if h.startswith(section)]
    assert len(headings) == 1, f"no single section of docs/performance.md starts with {section!r}"
    body = sections[headings[0]]
    matches = re.findall(pattern, body)
    assert len(matches) == 1, f"{pattern!r} quoted {len(matches)} times in {headings[0]!r}"
    computed = formula(lambda prefix, in_label=None: _row(body, prefix, in_label))
    assert _agrees(matches[0], computed), (
        f"{headings[0]!r} quotes {matches[0]} but its table gives {computed:.4g}")


# A measured ratio as prose quotes it: "19x slower", "2.03x", "**0.98**".
_FIGURE = re.compile(r"\b(\d+(?:\.\d+)?x)(?= |\)|,|\.|$)|\*\*(\d+\.\d+)\*\*")


def _other_docs():
    # tf_versions.md is the version matrix's generated table: its bold figures
    # are Python and TensorFlow versions, no performance figure.
    generated = {os.path.join(REPO_ROOT, "docs", "tf_versions.md")}
    return sorted(set(glob.glob(os.path.join(REPO_ROOT, "docs", "*.md")))
                  - {PERFORMANCE} - generated) + [os.path.join(REPO_ROOT, name)
                                      for name in ("README.md", "CHANGELOG.md")]


def test_figures_quoted_elsewhere_are_the_measured_ones():
    with open(PERFORMANCE, encoding="utf-8") as handle:
        measured = handle.read()
    stray = []
    for path in _other_docs():
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                for match in _FIGURE.finditer(line):
                    figure = match.group(1) or match.group(2)
                    if figure not in measured:
                        stray.append(f"{os.path.relpath(path, REPO_ROOT)}:{number}: "
                                     f"{figure} is not in docs/performance.md")
    assert stray == []
