"""The settings table: every value a user can set, in one place, and what walks it.

The rows live in :mod:`tpu_compat.settings_rows` (data; re-exported here as
:data:`ROWS`). Each :class:`Setting` row holds the environment variable, the ``tpu-compat``
flag and the pytest option that set it, its parser (:mod:`tpu_compat._config`:
bounds, and one clear error naming the variable or flag and the allowed
values), and its default for each *entry point*:

* ``install()``: a program that calls ``tpu_compat.install()`` itself,
* ``run``: ``tpu-compat run``,
* ``regress``: ``tpu-compat regress`` and ``tpu-compat verify``,
* ``pytest``: the pytest plugin.

An entry point calls :func:`resolve` once and passes the frozen
:class:`Settings` it returns down. Library code that runs inside a program
(the backend decision, a replica step being traced, the pod) reads one row
with :func:`read` when it needs it: the environment is the channel from the
entry point to the program and to the processes it starts (``tpu-compat run``
exports what it resolved, :func:`export`). ``tpu-compat run --help``,
``tpu-compat doctor`` and README.md's configuration table are generated from
these rows (:mod:`tpu_compat.settings_docs` writes README's).

Nothing here imports TensorFlow: the command line and the pytest plugin load
it before the device layout is chosen.
"""

import os

from tpu_compat import _config
# The table's shape, re-exported: settings.RUN, settings.Setting, ...
from tpu_compat.settings_schema import (  # pylint: disable=unused-import
    COMMANDS, ENTRY_POINT_NAMES, ENTRY_POINTS, LIBRARY, MIGRATE, PYTEST, REGRESS, RUN, UNSET,
    Computed, FrozenError, Setting, Settings)
# The rows, re-exported: settings.ROWS, settings.DEFAULT_EMULATED_REPLICAS, ...
# The functions below read ROWS from this module when called, so a test that
# replaces settings.ROWS (and adds to _BY_NAME) is seen by all of them.
from tpu_compat.settings_rows import (  # pylint: disable=unused-import
    DEFAULT_EMULATED_REPLICAS, ROWS, tf_keras_installed)

__all__ = ["ENTRY_POINTS", "LIBRARY", "MIGRATE", "PYTEST", "REGRESS", "ROWS", "RUN", "UNSET",
           "Setting",
           "Settings", "add_flags", "export", "flag_rows", "flags_given", "pytest_rows", "read",
           "resolve", "row"]

_BY_NAME = {setting.name: setting for setting in ROWS}

# The variables, for messages that name them.
BACKEND_VAR = _BY_NAME["backend"].variable
REPLICAS_VAR = _BY_NAME["num_replicas"].variable
HOSTS_VAR = _BY_NAME["num_hosts"].variable
WARNINGS_VAR = _BY_NAME["warnings"].variable
STRICT_VAR = _BY_NAME["strict"].variable
FIDELITY_VAR = _BY_NAME["fidelity"].variable
NUMERICS_VAR = _BY_NAME["numerics"].variable
NUMERICS_OPS_VAR = _BY_NAME["numerics_ops"].variable
SEED_VAR = _BY_NAME["seed"].variable
TF1_VAR = _BY_NAME["tf1"].variable
POD_TIMEOUT_VAR = _BY_NAME["pod_timeout"].variable
POD_PORT_VAR = _BY_NAME["pod_port"].variable
TPU_TIMEOUT_VAR = _BY_NAME["tpu_timeout"].variable
POD_LOGS_VAR = _BY_NAME["pod_logs"].variable
LEGACY_KERAS_VAR = _BY_NAME["legacy_keras"].variable
ONEDNN_VAR = _BY_NAME["onednn"].variable
MAX_FILE_BYTES_VAR = _BY_NAME["max_file_bytes"].variable

BACKENDS = _BY_NAME["backend"].choices
WARNING_POLICIES = _BY_NAME["warnings"].choices
STRICT_CHOICES = _BY_NAME["strict"].choices
FIDELITY_CHOICES = _BY_NAME["fidelity"].choices
NUMERICS_CHOICES = _BY_NAME["numerics"].choices


def row(name):
    """The row of setting ``name`` (a :class:`Settings` attribute name)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no setting {name!r}; settings: {', '.join(_BY_NAME)}") from None


def read(name, environ=None, entry=LIBRARY):
    """One setting from the environment (validated), else its default at ``entry``.

    For library code that needs a setting when the program reaches it (a
    replica step traced, the backend decided): the environment is what the
    entry point that started the program exported.
    """
    return row(name).read(environ, entry)


def resolve(entry, environ=None, flags=None, names=None):
    """The settings of entry point ``entry``, each validated once.

    Args:
      entry: one of :data:`ENTRY_POINTS`.
      environ: the environment (default ``os.environ``).
      flags: ``{name: raw value or None}``, what the command line gave; a
        given flag wins over the variable, and a bad one is named as the flag.
      names: the rows to resolve (default: every row with a default at
        ``entry``), in table order.

    Raises:
      ConfigError: naming the first bad variable or flag.
    """
    if entry not in ENTRY_POINTS:
        raise _config.ConfigError(f"entry={entry!r} is not valid; allowed values: "
                                  f"{', '.join(ENTRY_POINTS)}")
    environ = os.environ if environ is None else environ
    flags = {name: value for name, value in (flags or {}).items() if value is not None}
    wanted = set(names) if names is not None else {
        setting.name for setting in ROWS if entry in setting.defaults}
    for name in wanted | set(flags):
        if entry not in row(name).defaults:
            raise ValueError(f"setting {name!r} has no default at {entry}; add one to "
                             f"its row in tpu_compat/settings_rows.py")
    values, sources = {}, {}
    for setting in ROWS:
        if setting.name not in wanted:
            continue
        if flags.get(setting.name) is UNSET:
            values[setting.name] = None
            sources[setting.name] = setting.unset_flag
        elif setting.name in flags:
            flag = setting.pytest_option if entry == PYTEST else setting.flag
            values[setting.name] = setting.parse(flag, flags[setting.name])
            sources[setting.name] = flag
        elif entry not in setting.variable_ignored_by and setting.given_in(environ):
            values[setting.name] = setting.parse(setting.variable,
                                                 environ[setting.variable])
            sources[setting.name] = setting.variable
        else:
            values[setting.name] = setting.default(entry)
            sources[setting.name] = None
    return Settings(entry, values, sources)


def export(resolved, environ=None):
    """Writes what ``resolved`` took from flags, and the entry point's exported
    defaults, to the environment; returns the variables it set, in table order.

    The program's library code and the processes it starts (pod workers,
    child pytest processes) read the environment, not this object.
    """
    environ = os.environ if environ is None else environ
    changed = []
    for setting in ROWS:
        if setting.name not in resolved:
            continue
        value = getattr(resolved, setting.name)
        source = resolved.source(setting.name)
        from_flag = source not in (None, setting.variable)
        exported_default = (source is None and resolved.entry in setting.exported_by
                            and value is not None)
        if from_flag and value is None:  # an unset flag (--no-seed)
            environ.pop(setting.variable, None)
            changed.append(setting.variable)
        elif from_flag or exported_default:
            environ[setting.variable] = setting.text(value)
            changed.append(setting.variable)
    return changed


def flag_rows(entry, names=None):
    """The rows whose flag ``entry``'s commands take (of ``names``), table order."""
    return [setting for setting in ROWS if entry in setting.flag_entries
            and (names is None or setting.name in names)]


def pytest_rows():
    """The rows the pytest plugin takes an option for, table order."""
    return [setting for setting in ROWS if setting.pytest_option]


def flags_given(args, entry, names=None):
    """``{row name: raw value or None}`` for each of ``entry``'s flag rows, read
    from argparse's ``args`` (as :func:`add_flags` stored them), for
    :func:`resolve`'s ``flags``: every row's flag reaches it, none listed by hand."""
    return {setting.name: getattr(args, setting.name) for setting in flag_rows(entry, names)}


def add_flags(parser, entry, names=None):
    """Adds the settings' flags to ``entry``'s argparse ``parser``.

    Each flag's value lands under the row's name, unparsed (None when not
    given; :data:`UNSET` from a row's ``unset_flag``), for :func:`resolve`'s
    ``flags``; its help is the row's.
    """
    for setting in flag_rows(entry, names):
        target = parser
        if setting.unset_flag:
            target = parser.add_mutually_exclusive_group()
        if setting.flag_const is not None:
            target.add_argument(setting.flag, dest=setting.name, action="store_const",
                                const=setting.flag_const, help=setting.help(entry))
        else:
            target.add_argument(setting.flag, dest=setting.name, choices=setting.choices,
                                metavar=setting.metavar, help=setting.help(entry))
        if setting.unset_flag:
            target.add_argument(setting.unset_flag, dest=setting.name, action="store_const",
                                const=UNSET, help=setting.unset_summary)
