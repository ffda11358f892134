"""Regression suites for legacy scripts: `tpu-compat regress` and `tpu-compat verify`.

A suite is a set of scripts, each run unchanged in its own
``python -m tpu_compat run`` process. What a script reports (``KEY: number``
lines, ``RESULT {json}`` lines, files named in its ``SCRIPT.regress.toml``)
becomes a dict of numbers, recorded in a golden file or compared with one
within tolerance; ``verify`` compares a legacy script with its migrated copy
the same way.

Modules: :mod:`.sidecar` (per-script settings); :mod:`.reported`,
:mod:`.artifacts` and :mod:`.capture` (numbers from output and files);
:mod:`.script_process` (one script in its own process) and :mod:`.measure`
(run, then capture); :mod:`.golden` and :mod:`.compare`; :mod:`.suite` and
:mod:`.verify` (the two checks); :mod:`.junit`. None prints: the command line
is :mod:`tpu_compat.commands.regress`. None imports TensorFlow, except to read
a checkpoint.
"""
