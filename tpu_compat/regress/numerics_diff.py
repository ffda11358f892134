"""``numerics-diff``: how far do a program's numbers move on a TPU's precision?

The script runs twice on the same emulated TPU with the same seed, under
``--numerics exact`` and ``--numerics tpu`` (docs/emulated_tpu.md#numerics),
and the numbers it reports (as ``regress`` and ``verify`` read them, its
sidecar included) are compared key by key. The report ranks the numbers by
how far they moved, so a user can tell "this is the TPU's bfloat16 matmul
precision" (numbers move by ~1e-3 relative and stay put under ``exact``)
from a bug (numbers that differ in ways the precision cannot explain).
"""

import dataclasses
import json
import math
import os
import tempfile
from typing import Optional, Tuple

from tpu_compat.regress import measure, script_process, sidecar

__all__ = ["Moved", "NumericsDiff", "OpsAtStep", "numerics_diff"]


@dataclasses.dataclass(frozen=True)
class Moved:
    """One number under both numerics."""

    key: str
    exact: float
    tpu: float

    @property
    def absolute(self):
        return abs(self.tpu - self.exact)

    @property
    def relative(self):
        """|tpu - exact| / |exact|; inf when only one is 0 or they are not both finite."""
        if self.exact == self.tpu or (math.isnan(self.exact) and math.isnan(self.tpu)):
            return 0.0
        if self.exact == 0 or not (math.isfinite(self.exact) and math.isfinite(self.tpu)):
            return math.inf
        return self.absolute / abs(self.exact)


@dataclasses.dataclass(frozen=True)
class OpsAtStep:
    """``--ops-at-step``: the rounded ops replica 0 ran in step ``step`` (1-based).

    Each op is a dict (tpu_compat/fidelity/numerics_ops.py writes them): ``op``,
    ``name``, ``pass`` (forward/backward), ``file``, ``line``, ``relative``
    (max |rounded - exact| / max |exact| of its output), largest first.
    """

    step: int
    steps_run: int = 0  # replica steps replica 0 ran in the whole tpu run
    ops: Tuple[dict, ...] = ()
    problem: Optional[str] = None  # why there is no record


def _read_ops(path, step):
    try:
        with open(path, encoding="utf-8") as stream:
            report = json.load(stream)
    except FileNotFoundError:
        return OpsAtStep(step, problem="the tpu run wrote no record of its ops")
    except (OSError, ValueError) as error:
        return OpsAtStep(step, problem=f"the tpu run's record of its ops is unreadable: "
                                       f"{error}")
    found = OpsAtStep(step, report.get("steps_run", 0), tuple(report.get("ops", ())))
    if report.get("not_recorded"):
        return dataclasses.replace(found, problem=f"not recorded: {report['not_recorded']}")
    if found.steps_run < step:
        return dataclasses.replace(
            found, problem=f"replica 0 ran {found.steps_run} counted replica step(s), "
                           f"so there is no step {step}")
    return found


@dataclasses.dataclass(frozen=True)
class NumericsDiff:
    exact: Optional[measure.Measurement]
    tpu: Optional[measure.Measurement]
    moved: Tuple[Moved, ...] = ()  # every number on both sides, most moved first
    only_exact: Tuple[str, ...] = ()  # keys one run reported and the other did not
    only_tpu: Tuple[str, ...] = ()
    problem: Optional[str] = None  # why nothing could be compared
    ops: Optional[OpsAtStep] = None  # with ops_at_step

    @property
    def largest(self):
        return self.moved[0] if self.moved else None


def _ranked(exact_numbers, tpu_numbers):
    both = [Moved(key, value, tpu_numbers[key]) for key, value in exact_numbers.items()
            if key in tpu_numbers]
    # Stable: equal moves keep the order the script reported them in.
    return tuple(sorted(both, key=lambda moved: -moved.relative))


def numerics_diff(path, args, options, command=script_process.tpu_compat_command,
                  ops_at_step=None):
    """Runs ``path`` (with ``args``, else its sidecar's) under both numerics.

    With ``ops_at_step`` (1-based), the tpu run also records the rounded ops
    replica 0 runs in that replica step (``TPU_COMPAT_NUMERICS_OPS``).
    """
    try:
        config = sidecar.load(path)
    except sidecar.SidecarError as error:
        return NumericsDiff(None, None, problem=str(error))
    with tempfile.TemporaryDirectory(prefix="tpu-compat-numerics-ops-") as directory:
        record = os.path.join(directory, "ops.json")
        runs = {}
        for numerics in ("exact", "tpu"):
            launch = measure.launch_for(path, config,
                                        dataclasses.replace(options, numerics=numerics))
            if args:
                launch = dataclasses.replace(launch, args=tuple(args))
            if numerics == "tpu" and ops_at_step is not None:
                launch = dataclasses.replace(launch, numerics_ops=f"{ops_at_step}:{record}")
            runs[numerics] = measure.measure(launch, config, command)
        ops = _read_ops(record, ops_at_step) if ops_at_step is not None else None
    exact, tpu = runs["exact"], runs["tpu"]
    for label, run in runs.items():
        if not run.ok:
            return NumericsDiff(exact, tpu, problem=f"{path} under --numerics {label} "
                                                    f"{run.problem}")
    return NumericsDiff(
        exact, tpu, _ranked(exact.numbers, tpu.numbers),
        tuple(key for key in exact.numbers if key not in tpu.numbers),
        tuple(key for key in tpu.numbers if key not in exact.numbers), ops=ops)
