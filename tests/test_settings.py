"""The settings table (tpu_compat/settings.py; its rows: settings_rows.py): one row
per setting, one default each.

--help, doctor and README.md's configuration table are generated from the rows,
and compared with them here; each entry point's defaults are checked where the
entry point applies them. None of this imports TensorFlow.
"""

import argparse
import ast
import os
import pathlib
import re

import pytest

from conftest import REPO_ROOT
from tpu_compat import _config, cli, runner, settings, settings_docs
from tpu_compat.commands import doctor
from tpu_compat.commands import regress as regress_command
from tpu_compat.exit_codes import UsageError
from tpu_compat.regress import script_process

PACKAGE = pathlib.Path(REPO_ROOT) / "tpu_compat"
VARIABLES = {setting.variable for setting in settings.ROWS}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


# -- the table -------------------------------------------------------------------------------


def test_every_variable_has_one_row():
    assert [setting.variable for setting in settings.ROWS] == [
        "TPU_COMPAT_BACKEND", "TPU_COMPAT_NUM_REPLICAS", "TPU_COMPAT_NUM_HOSTS",
        "TPU_COMPAT_WARNINGS", "TPU_COMPAT_STRICT", "TPU_COMPAT_FIDELITY",
        "TPU_COMPAT_NUMERICS", "TPU_COMPAT_NUMERICS_OPS", "TPU_COMPAT_SEED", "TPU_COMPAT_TF1",
        "TPU_COMPAT_POD_TIMEOUT", "TPU_COMPAT_POD_PORT", "TPU_COMPAT_POD_LOGS",
        "TPU_COMPAT_TPU_TIMEOUT", "TF_USE_LEGACY_KERAS", "TF_ENABLE_ONEDNN_OPTS", "TPU_COMPAT_MAX_FILE_BYTES"]
    assert len({setting.name for setting in settings.ROWS}) == len(settings.ROWS)
    # Every TPU_COMPAT_* variable the package's docs and code mention is a row.
    mentioned = set()
    for path, _ in _modules():
        mentioned.update(re.findall(r"\bTPU_COMPAT_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    assert mentioned <= VARIABLES, mentioned - VARIABLES


def test_each_entry_point_has_its_defaults():
    """README's promise: fidelity tpu for run/regress/verify/pytest, cpu for install()."""
    expected = {
        settings.RUN: {"backend": "auto", "num_replicas": None, "fidelity": "tpu",
                       "strict": "auto", "warnings": None, "num_hosts": None,
                       "seed": None, "tf1": False, "pod_timeout": 60.0, "pod_port": None,
                       "numerics": "exact"},
        settings.REGRESS: {"backend": "cpu", "num_replicas": 8, "fidelity": "tpu", "seed": 0,
                           "numerics": "exact"},
        settings.PYTEST: {"backend": "auto", "num_replicas": 8, "fidelity": "tpu",
                          "warnings": None, "num_hosts": None, "numerics": "exact"},
        settings.LIBRARY: {"backend": "auto", "num_replicas": None, "fidelity": "cpu",
                           "strict": "auto", "warnings": None, "num_hosts": None,
                           "pod_timeout": 60.0, "pod_port": None, "legacy_keras": None,
                           "onednn": None, "numerics": "exact"},
        settings.MIGRATE: {"max_file_bytes": 1_000_000},
    }
    for entry, defaults in expected.items():
        resolved = settings.resolve(entry, environ={})
        for name, value in defaults.items():
            assert getattr(resolved, name) == value, (entry, name)
            assert resolved.source(name) is None


def test_the_entry_points_apply_their_defaults():
    # tpu-compat run exports its fidelity; the library keeps cpu.
    environ = {"TF_USE_LEGACY_KERAS": "1"}
    assert "TPU_COMPAT_FIDELITY" in runner.prepare_environment(environ=environ)
    assert environ["TPU_COMPAT_FIDELITY"] == "tpu"
    assert environ["TF_ENABLE_ONEDNN_OPTS"] == "0"  # the emulated cores' convolutions
    assert settings.read("fidelity", {}) == "cpu"
    # regress and verify: the CPU emulation, tpu fidelity, 8 replicas, seed 0.
    assert script_process.chosen_backend(environ={}) == "cpu"
    assert script_process.chosen_fidelity(environ={}) == "tpu"
    args = cli.build_parser().parse_args(["verify", "a.py", "b.py"])
    assert (args.seed, args.backend, args.num_replicas, args.fidelity) == (None,) * 4
    options = regress_command._run_options(args)  # pylint: disable=protected-access
    assert (options.seed, options.backend, options.replicas) == (0, "cpu", 8)
    # An exported default is only written when the user left the variable unset.
    environ = {"TPU_COMPAT_FIDELITY": "cpu", "TF_USE_LEGACY_KERAS": "",
               "TF_ENABLE_ONEDNN_OPTS": "1"}
    assert runner.prepare_environment(environ=environ) == []
    assert environ == {"TPU_COMPAT_FIDELITY": "cpu", "TF_USE_LEGACY_KERAS": "",
                       "TF_ENABLE_ONEDNN_OPTS": "1"}


def test_a_flag_wins_and_is_named_when_bad():
    environ = {"TPU_COMPAT_NUM_REPLICAS": "4", "TPU_COMPAT_FIDELITY": "cpu"}
    resolved = settings.resolve(settings.RUN, environ, flags={"num_replicas": "2"})
    assert (resolved.num_replicas, resolved.source("num_replicas")) == (2, "--replicas")
    assert (resolved.fidelity, resolved.source("fidelity")) == ("cpu", "TPU_COMPAT_FIDELITY")
    with pytest.raises(_config.ConfigError,
                       match=r"^--replicas='0' is not valid; expected an integer from 1 to 4096$"):
        settings.resolve(settings.RUN, environ, flags={"num_replicas": "0"})
    with pytest.raises(_config.ConfigError, match=r"^--tpu-compat-replicas='x' is not valid"):
        settings.resolve(settings.PYTEST, {}, flags={"num_replicas": "x"})
    with pytest.raises(_config.ConfigError,
                       match=r"^TPU_COMPAT_SEED='-1' is not valid; expected an integer from 0 to "):
        settings.resolve(settings.RUN, {"TPU_COMPAT_SEED": "-1"})
    with pytest.raises(_config.ConfigError, match="entry='cli' is not valid; allowed values: "
                                                  "run, regress, pytest, install()"):
        settings.resolve("cli")


def test_resolved_settings_are_frozen_and_say_what_they_hold():
    resolved = settings.resolve(settings.REGRESS, {}, names=("backend",))
    with pytest.raises(settings.FrozenError, match="cannot assign to field .backend."):
        resolved.backend = "tpu"
    with pytest.raises(AttributeError, match="'fidelity' is not a setting resolved for "
                                             "regress; resolved: backend"):
        resolved.fidelity  # pylint: disable=pointless-statement
    with pytest.raises(KeyError, match="no setting 'colour'"):
        settings.row("colour")


# -- one definition each ---------------------------------------------------------------------

# Defaults that are not settings: per-command limits and tolerances.
_OTHER_DEFAULTS = {"DEFAULT_TIMEOUT_SECONDS", "DEFAULT_RTOL", "DEFAULT_ATOL"}


def test_each_default_is_defined_only_in_the_table():
    """No module but settings.py and settings_rows.py (the table) holds a setting's
    default or reads its variable with a fallback of its own (``environ.get(VAR, default)``)."""
    offenders = []
    for path, tree in _modules():
        if path.name in ("settings.py", "settings_rows.py"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                offenders += [f"{path.name}:{node.lineno} defines {target.id}"
                              for target in node.targets if isinstance(target, ast.Name)
                              and target.id.startswith("DEFAULT_")
                              and target.id not in _OTHER_DEFAULTS]
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "getenv", "setdefault") and node.args):
                key = node.args[0]
                named = ((isinstance(key, ast.Constant) and key.value in VARIABLES)
                         or (isinstance(key, ast.Attribute) and key.attr.endswith("_VAR")))
                if named:
                    offenders.append(f"{path.name}:{node.lineno} reads {ast.unparse(key)} "
                                     f"with its own fallback")
    assert not offenders


def test_exit_codes_are_defined_once():
    defined = [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path, tree in _modules()
               for node in ast.walk(tree) if isinstance(node, ast.Assign)
               for target in node.targets
               if isinstance(target, ast.Name) and target.id.startswith("EXIT_")]
    assert defined and all(place.startswith("exit_codes.py:") for place in defined), defined


def test_every_subcommand_lives_in_commands():
    parser = cli.build_parser()
    subparsers = next(action for action in parser._actions  # pylint: disable=protected-access
                      if isinstance(action, argparse._SubParsersAction))  # pylint: disable=protected-access
    assert list(subparsers.choices) == ["run", "doctor", "worker", "matrix", "scan",
                                        "upgrade", "regress", "verify", "numerics-diff"]
    for name, subparser in subparsers.choices.items():
        handler = subparser.get_default("handler")
        module = getattr(handler, "__module__", "")
        assert module.startswith("tpu_compat.commands."), (name, module)
    assert not (PACKAGE / "migrate" / "commands.py").exists()
    assert not (PACKAGE / "regress" / "commands.py").exists()
    assert not (PACKAGE / "regress" / "runner.py").exists()


# -- generated from the table ------------------------------------------------------------------


def test_readme_table_is_generated_from_the_table():
    readme_path = os.path.join(REPO_ROOT, "README.md")
    with open(readme_path, encoding="utf-8") as handle:
        readme = handle.read()
    assert settings_docs.with_readme_table(readme) == readme, (
        "README.md's configuration table is stale; regenerate it with: "
        "python scripts/settings_table.py")
    for setting in settings.ROWS:
        assert f"| `{setting.variable}` |" in readme
    assert ("`tpu` for `run`, `regress`, `verify` and the pytest plugin; `cpu` for programs "
            "that call `install()` themselves") in readme


def _flag_helps(command):
    parser = cli.build_parser()
    subparsers = next(action for action in parser._actions  # pylint: disable=protected-access
                      if isinstance(action, argparse._SubParsersAction))  # pylint: disable=protected-access
    subparser = subparsers.choices[command]
    return subparser, {action.option_strings[0]: action  # pylint: disable-next=protected-access
                       for action in subparser._actions if action.option_strings}


@pytest.mark.parametrize("command,entry", [("run", settings.RUN), ("regress", settings.REGRESS),
                                           ("verify", settings.REGRESS)])
def test_help_is_generated_from_the_table(command, entry):
    subparser, actions = _flag_helps(command)
    text = " ".join(subparser.format_help().split())
    rows = settings.flag_rows(entry)
    assert rows
    for setting in rows:
        action = actions[setting.flag]
        assert action.dest == setting.name
        assert action.option_strings == [setting.flag]
        assert action.help == setting.help(entry)
        assert tuple(action.choices or ()) == tuple(setting.choices or ())
        assert " ".join(setting.help(entry).split()) in text
        if setting.unset_flag:
            groups = subparser._mutually_exclusive_groups  # pylint: disable=protected-access
            assert any({setting.flag, setting.unset_flag} <= {
                option for action in group._group_actions  # pylint: disable=protected-access
                for option in action.option_strings} for group in groups)
            assert setting.unset_flag in text and setting.unset_summary in text
    if entry == settings.REGRESS:
        # The seed is regress's own: its help names the row's default, not the variable.
        assert "--no-seed" in text and "(default: 0)" in text


def test_run_help_tells_the_fidelity_default_truth(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: $TPU_COMPAT_FIDELITY, else tpu)" in text
    assert "or cpu)" not in text


def test_doctor_reports_every_row():
    facts = doctor.settings_facts({})
    assert [name for name, _ in facts] == [setting.variable for setting in settings.ROWS]
    pod_facts = dict(doctor.pod_settings({}))
    for (variable, fact), setting in zip(facts, settings.ROWS):
        if variable in pod_facts:
            assert fact == pod_facts[variable]
        else:
            assert fact == f"unset: {setting.defaults_sentence(quote='')}"
    assert dict(facts)["TPU_COMPAT_FIDELITY"] == (
        "unset: tpu for run, regress, verify and the pytest plugin; cpu for programs "
        "that call install() themselves")
    set_facts = dict(doctor.settings_facts({"TPU_COMPAT_FIDELITY": "TPU",
                                            "TPU_COMPAT_NUM_REPLICAS": "4"}))
    assert set_facts["TPU_COMPAT_FIDELITY"] == "tpu (set)"
    assert set_facts["TPU_COMPAT_NUM_REPLICAS"] == "4 (set)"
    with pytest.raises(_config.ConfigError, match="TPU_COMPAT_SEED='x' is not valid"):
        doctor.settings_facts({"TPU_COMPAT_SEED": "x"})


# -- every flag row reaches what its command resolves ------------------------------------------
# (issue #32: a new `run` flag row showed in --help and was silently dropped.)

# A valid value of each flag row that no entry point has as its default, so a
# flag that never reaches resolve() cannot pass as the default. A new flag row
# without a choices= list needs a sample here.
_SAMPLES = {"num_replicas": ("4", 4), "num_hosts": ("2", 2), "seed": ("7", 7),
            "max_file_bytes": ("123", 123)}
# What each command takes of its entry point's flag rows, and what it resolves them
# into: the run's exported environment, a RunOptions field, scan's limit.
_POSITIONALS = {"run": ["x.py"], "regress": ["x.py", "--golden", "g", "--check"], "verify": ["a.py", "b.py"],
                "numerics-diff": ["x.py"], "scan": ["x.py"], "upgrade": ["x.py"]}
_LEFT_OUT = {("numerics-diff", "numerics"): "it runs the script under both exact and tpu"}
_OPTIONS_FIELD = {"num_replicas": "replicas"}


class _Stop(Exception):
    pass


def _sample(setting, entry):
    if setting.flag_const is not None:  # a switch (--tf1): given without a value
        return None, setting.parse(setting.flag, setting.flag_const)
    if setting.choices:
        value = [c for c in setting.choices if c != setting.default(entry)][-1]
        return value, value
    assert setting.name in _SAMPLES, f"add a sample value of {setting.flag} to _SAMPLES"
    return _SAMPLES[setting.name]


def _flag_cases():
    commands = dict(settings.COMMANDS)
    commands[settings.REGRESS] += ("numerics-diff",)
    return [pytest.param(entry, command, setting, id=f"{command} {setting.flag}")
            for entry, names in commands.items() for command in names
            for setting in settings.flag_rows(entry)
            if (command, setting.name) not in _LEFT_OUT]


def _resolved(command, args, setting, monkeypatch):
    """What ``command`` resolves from ``args`` for ``setting``, as the command does."""
    # pylint: disable=import-outside-toplevel
    from tpu_compat import tf_support
    from tpu_compat.commands import numerics_diff, regress, run, scan
    if command == "run":
        for row in settings.ROWS:
            monkeypatch.delenv(row.variable, raising=False)

        def stop():
            raise _Stop
        monkeypatch.setattr(tf_support, "require_tensorflow", stop)
        # run's handler exports into os.environ, and delenv of a variable that
        # was not set records nothing to undo: put the whole environment back,
        # or later tests in this worker (and every program they start) inherit
        # the exports (a TPU_COMPAT_NUM_HOSTS=2 made them emulated pods).
        saved = dict(os.environ)
        try:
            with pytest.raises(_Stop):  # run's handler, up to TensorFlow's import
                run.handle(args)
            return setting.parse(setting.variable, os.environ[setting.variable])
        finally:
            os.environ.clear()
            os.environ.update(saved)
    if command in ("scan", "upgrade"):
        assert setting.name == "max_file_bytes", setting
        return scan.max_file_bytes(args)
    module = numerics_diff if command == "numerics-diff" else regress
    options = module._run_options(args)  # pylint: disable=protected-access
    return getattr(options, _OPTIONS_FIELD.get(setting.name, setting.name))


@pytest.mark.parametrize("entry,command,setting", _flag_cases())
def test_every_flag_row_reaches_what_its_command_resolves(entry, command, setting, monkeypatch):
    text, value = _sample(setting, entry)
    given = setting.flag if text is None else f"{setting.flag}={text}"
    args = cli.build_parser().parse_args([command, given, *_POSITIONALS[command]])
    assert value != setting.default(entry)
    assert _resolved(command, args, setting, monkeypatch) == value


_UNSET_CASES = [case for case in _flag_cases() if case.values[2].unset_flag]


@pytest.mark.parametrize("entry,command,setting", _UNSET_CASES)
def test_every_unset_flag_reaches_what_its_command_resolves(entry, command, setting,
                                                            monkeypatch):
    # --no-seed: no value at all, whatever the variable says where it is ignored.
    assert setting.default(entry) is not None
    if entry in setting.variable_ignored_by:
        monkeypatch.setenv(setting.variable, _sample(setting, entry)[0])
    args = cli.build_parser().parse_args([command, setting.unset_flag,
                                          *_POSITIONALS[command]])
    assert _resolved(command, args, setting, monkeypatch) is None


def test_the_seed_variable_does_not_reach_regress(monkeypatch):
    monkeypatch.setenv(settings.SEED_VAR, "5")
    assert settings.resolve(settings.REGRESS, names=("seed",)).seed == 0
    assert settings.resolve(settings.RUN, names=("seed",)).seed == 5
    with pytest.raises(UsageError, match="not allowed with argument --seed"):
        cli.build_parser().parse_args(["regress", "x.py", "--golden", "g", "--check",
                                       "--seed", "1", "--no-seed"])


def test_no_flag_is_added_by_hand_beside_the_rows():
    # Issue #32: --tf1 and --seed were argparse calls of their own. A flag that
    # is also a row's must come from settings.add_flags, nowhere else.
    row_flags = {flag for setting in settings.ROWS
                 for flag in (setting.flag, setting.unset_flag) if flag}
    for path, tree in _modules():
        if path.name in ("settings.py", "settings_rows.py"):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                assert node.args[0].value not in row_flags, (path, node.args[0].value)


def test_the_flag_cases_cover_every_flag_row():
    covered = {(case.values[0], case.values[2].name) for case in _flag_cases()}
    assert covered == {(entry, setting.name) for entry in settings.ENTRY_POINTS
                       for setting in settings.flag_rows(entry)}
