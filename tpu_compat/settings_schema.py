"""The shape of the settings table (:mod:`tpu_compat.settings` holds its rows).

A :class:`Setting` is one row; :class:`Settings` is what an entry point
resolved from the rows, once; :class:`Computed` is a default that what is
installed decides. All are read-only. ``import tpu_compat`` loads this module,
so it imports nothing heavy (no dataclasses, whose import costs more than the
whole package).
"""

import os
import types

__all__ = ["COMMANDS", "ENTRY_POINTS", "ENTRY_POINT_NAMES", "LIBRARY", "MIGRATE", "PYTEST",
           "REGRESS", "RUN", "UNSET", "Computed", "FrozenError", "Setting", "Settings"]

# The entry points, in the order the documentation names them.
RUN, REGRESS, PYTEST, LIBRARY = "run", "regress", "pytest", "install()"
MIGRATE = "scan/upgrade"
ENTRY_POINTS = (RUN, REGRESS, PYTEST, LIBRARY, MIGRATE)
# How the documentation names each entry point.
ENTRY_POINT_NAMES = {RUN: "`run`", REGRESS: "`regress`, `verify`",
                     PYTEST: "the pytest plugin",
                     LIBRARY: "programs that call `install()` themselves",
                     MIGRATE: "`scan`, `upgrade`"}
# The subcommands that are each entry point (their flags share the rows).
COMMANDS = {RUN: ("run",), REGRESS: ("regress", "verify"), MIGRATE: ("scan", "upgrade")}


class _Unset:
    """What a row's ``unset_flag`` (``--no-seed``) gives: no value, on purpose."""

    __slots__ = ()

    def __repr__(self):
        return "UNSET"


UNSET = _Unset()


class FrozenError(AttributeError):
    """A row or resolved settings were assigned to: they are read-only."""


class _Frozen:
    """Read-only after ``__init__``."""

    __slots__ = ()

    def _init(self, **fields):
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise FrozenError(f"cannot assign to field {name!r}: {type(self).__name__} "
                          f"is read-only")

    def __delattr__(self, name):
        raise FrozenError(f"cannot delete field {name!r}: {type(self).__name__} "
                          f"is read-only")


class Computed(_Frozen):
    """A default that what is installed decides, computed when resolved."""

    __slots__ = ("compute", "text")

    def __init__(self, compute, text):
        # compute() -> the default; text: how the documentation states it.
        self._init(compute=compute, text=text)


class Setting(_Frozen):
    """One row: a setting, where it can be given, and its defaults."""

    __slots__ = ("name", "variable", "parse", "defaults", "values", "meaning", "summary",
                 "flag", "flag_entries", "metavar", "choices", "flag_const", "unset_flag",
                 "unset_summary", "variable_ignored_by", "pytest_option",
                 "pytest_summary", "pytest_const", "show", "exported_by", "blank_is_unset")

    def __init__(self, name, variable, parse, defaults, *, values, meaning, summary="",
                 flag=None, flag_entries=(), metavar=None, choices=None, flag_const=None,
                 unset_flag=None, unset_summary="", variable_ignored_by=(),
                 pytest_option=None, pytest_summary="", pytest_const=None, show=str,
                 exported_by=(), blank_is_unset=True):
        """
        Args:
          name: the attribute of :class:`Settings`.
          variable: the environment variable.
          parse: ``parse(name given under, raw) -> value`` (:mod:`._config`).
          defaults: ``{entry point: default}`` (or a :class:`Computed` one); the
            entry points that read the setting.
          values: the allowed values, for people; meaning: README's explanation.
          summary: the flag's --help explanation.
          flag, flag_entries: the flag, and the entry points whose commands take it.
          metavar, choices: argparse's, for the flag.
          flag_const: the raw value the flag stands for when it takes no value
            (``--tf1``: ``1``); None: it takes one.
          unset_flag, unset_summary: a second flag (and its --help) that
            chooses no value at all (``--no-seed``), beside ``flag``.
          variable_ignored_by: entry points that never read the variable
            (they set it for each process they start: regress's seed).
          pytest_option: the pytest plugin's option for it; the plugin adds an
            option for each row that has one, and exports what it resolved.
          pytest_summary: the option's --help explanation (default: summary).
          pytest_const: the raw value the pytest option stands for when it
            takes no value (``--tpu``: backend ``tpu``); None: it takes one.
          show: how a value reads in --help, doctor and README.
          exported_by: entry points that set the variable to their default when
            it is unset, so the program's library code (and the processes it
            starts) see it.
          blank_is_unset: whether a variable set to blanks counts as unset (ours
            do); TensorFlow reads TF_USE_LEGACY_KERAS="" as a choice (Keras 3).
        """
        self._init(name=name, variable=variable, parse=parse,
                   defaults=types.MappingProxyType(dict(defaults)), values=values,
                   meaning=meaning, summary=summary, flag=flag,
                   flag_entries=tuple(flag_entries), metavar=metavar, choices=choices,
                   flag_const=flag_const, unset_flag=unset_flag, unset_summary=unset_summary,
                   variable_ignored_by=tuple(variable_ignored_by),
                   pytest_option=pytest_option, pytest_summary=pytest_summary or summary,
                   pytest_const=pytest_const, show=show,
                   exported_by=tuple(exported_by), blank_is_unset=blank_is_unset)

    def __repr__(self):
        return f"Setting({self.name!r}, {self.variable!r})"

    def given_in(self, environ):
        """Whether ``environ`` sets the variable."""
        if self.blank_is_unset:
            return bool(environ.get(self.variable, "").strip())
        return self.variable in environ

    def default(self, entry):
        """The default at ``entry``."""
        value = self.defaults[entry]
        return value.compute() if isinstance(value, Computed) else value

    def default_text(self, entry):
        """The default at ``entry`` as the documentation states it."""
        value = self.defaults[entry]
        return value.text if isinstance(value, Computed) else self.show(value)

    def _default_is_a_value(self, entry):
        value = self.defaults[entry]
        return value is not None and not isinstance(value, Computed)

    def read(self, environ=None, entry=LIBRARY):
        """The variable's value, parsed, else the default at ``entry``."""
        environ = os.environ if environ is None else environ
        if entry not in self.variable_ignored_by and self.given_in(environ):
            return self.parse(self.variable, environ[self.variable])
        return self.default(entry)

    def defaults_sentence(self, entries=ENTRY_POINTS, quote="`"):
        """The defaults in words: one value, or which entry point has which."""
        groups = {}
        for entry in entries:
            if entry in self.defaults:
                text = self.default_text(entry)
                if self._default_is_a_value(entry):
                    text = f"{quote}{text}{quote}"
                groups.setdefault(text, []).append(entry)
        if len(groups) == 1:
            return next(iter(groups))
        parts = []
        for text, group in groups.items():
            names = [ENTRY_POINT_NAMES[entry] if quote else
                     ENTRY_POINT_NAMES[entry].replace("`", "") for entry in group]
            listed = (", ".join(names[:-1]) + " and " + names[-1]) if len(names) > 1 \
                else names[0]
            parts.append(f"{text} for {listed}")
        return "; ".join(parts)

    def help(self, entry):
        """The flag's --help line for ``entry``'s commands."""
        if entry in self.variable_ignored_by:
            return f"{self.summary} (default: {self.default_text(entry)})"
        return (f"{self.summary} (default: ${self.variable}, else "
                f"{self.default_text(entry)})")

    def text(self, value):
        """``value`` as the variable holds it (a switch: ``1`` / ``0``)."""
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(value)

    @property
    def pytest_dest(self):
        """Where pytest stores the row's option (``config.getoption``'s name)."""
        return self.pytest_option.lstrip("-").replace("-", "_")

    def pytest_help(self):
        """The pytest option's --help line."""
        if self.pytest_const is not None:
            return f"{self.pytest_summary} (sets ${self.variable} to {self.pytest_const})"
        return (f"{self.pytest_summary} (default: ${self.variable}, else "
                f"{self.default_text(PYTEST)})")


class Settings(_Frozen):
    """The settings of one entry point, resolved once; read-only.

    Attributes are the rows' names (``backend``, ``num_replicas``, ...).
    """

    __slots__ = ("entry", "_values", "_sources")

    def __init__(self, entry, values, sources):
        self._init(entry=entry, _values=types.MappingProxyType(dict(values)),
                   _sources=types.MappingProxyType(dict(sources)))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(
            f"{name!r} is not a setting resolved for {self.entry}; resolved: "
            f"{', '.join(values)}")

    def __repr__(self):
        values = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        return f"Settings({self.entry}: {values})"

    def __contains__(self, name):
        return name in self._values

    def source(self, name):
        """Where ``name`` came from: the flag, the variable, or None (the default)."""
        return self._sources[name]

    def items(self):
        return self._values.items()
