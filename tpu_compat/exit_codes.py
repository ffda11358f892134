"""The exit codes of every ``tpu-compat`` command, defined once.

``0`` clean, ``1`` findings, failures or TensorFlow missing, ``2`` a usage
error (a bad flag, variable or argument, or tpu_compat's own configuration
error), as linters (flake8, ruff) and argparse have it. A command raises
:class:`UsageError` for bad input; ``cli.main`` prints its one line and exits
with :data:`EXIT_USAGE`. Nothing here imports TensorFlow.
"""

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
# `tpu-compat worker`: its port is taken, so the chief may retry elsewhere.
EXIT_PORT_TAKEN = 3
# 128 + SIGINT, as a shell reports Ctrl-C.
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad command-line input; reported as one line with exit code 2."""
