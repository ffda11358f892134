"""Every row of the legacy-API table warns where its API is used.

In the spirit of six's tests over its move table: one test per record, each
checking that a program using the record's API gets a TPUCompatDeprecationWarning
with the record's rule id at the line the program wrote. The snippets run in
one scenario (tests/scenarios/legacy_table.py, TF 2.x code eagerly and TF 1.15
code in a graph); a line without a rule marker must not warn, so TensorFlow's
and tpu_compat's own uses of an API stay silent.
"""

import inspect
import json
import textwrap

import pytest

import tpu_compat
from tpu_compat import legacy_api
from tpu_compat.runtime import hooks
from conftest import check_ok, run_cli, run_scenario

pytestmark = pytest.mark.requires_tf


@pytest.fixture(scope="module")
def snippets():
    result = check_ok(run_scenario("legacy_table.py", 2))
    found = [json.loads(line[len("SNIPPET "):]) for line in result.stdout.splitlines()
             if line.startswith("SNIPPET ")]
    assert found, result.stdout
    return found


def _uses(found, rule):
    """``(expected lines, [(file, line) warned])`` of ``rule`` over all snippets."""
    expected, warned = [], []
    for snippet in found:
        expected += [(snippet["file"], line) for r, line in snippet["expected"] if r == rule]
        warned += [(w["file"], w["line"]) for w in snippet["warnings"] if w["rule"] == rule]
    return sorted(expected), sorted(warned)


@pytest.mark.parametrize("record", legacy_api.RECORDS, ids=lambda r: r.rule)
def test_record_warns_at_the_users_line(record, snippets):
    expected, warned = _uses(snippets, record.rule)
    if not record.hook.observable:
        assert record.hook.reason and not warned
        return
    assert expected, f"no snippet in tests/scenarios/legacy_table.py uses {record.rule}"
    # One warning per marked line, each at that line of the program (file and
    # line), and none anywhere else.
    assert warned == expected


def test_unmarked_lines_do_not_warn(snippets):
    # TF's run() calling extended.call_for_each_replica, the router building
    # the TF 1.15 strategy, iterator.initializer calling initialize(), an
    # adapter reading extended.steps_per_run: internal uses are silent.
    for snippet in snippets:
        got = sorted([w["rule"], w["line"]] for w in snippet["warnings"])
        assert got == snippet["expected"], snippet["name"]


def test_every_hook_target_is_instrumented(tpu8):
    del tpu8
    import keras  # noqa: F401  (Keras 3 and tf_keras: TPC016's targets)
    import tf_keras  # noqa: F401
    from tpu_compat.runtime import (adapter, emulated, native_methods,  # noqa: F401
                                    strategy_by_era, strategy_v1, strategy_v2)
    tpu_compat.uninstall()
    with tpu_compat.install(warnings="ignore"):
        for module_name, members in hooks.targets().items():
            module = __import__(module_name, fromlist=["_"])
            for path, entries in members.items():
                owner = module
                for part in path.split(".")[:-1]:
                    owner = getattr(owner, part)
                name = path.split(".")[-1]
                # Static lookup: a module attribute's reads() hook is a
                # property on the module's class (reading it would warn).
                member = inspect.getattr_static(owner, name)
                rules = tuple(record.rule for record, _ in entries)
                assert hooks.hooked_rules(member) == rules, f"{module_name}:{path}"
    # uninstall() took the hooks off TensorFlow's classes again.
    from tensorflow.python.distribute import distribute_lib
    assert not hooks.hooked_rules(vars(distribute_lib.StrategyExtendedV1)["call_for_each_replica"])


HALF_MIGRATED = textwrap.dedent("""
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=4)
    with strategy.scope():
        print("migrated:", strategy.run(tf.function(lambda: tf.constant(1.0))))
""")


def test_warnings_error_fails_a_half_migrated_script(tmp_path):
    script = tmp_path / "half_migrated.py"
    script.write_text(HALF_MIGRATED)
    result = run_cli("run", "--replicas", "1", "--warnings", "error", str(script))
    assert result.returncode != 0
    assert "migrated:" not in result.stdout
    assert "TPUCompatDeprecationWarning" in result.stderr
    assert "[TPC007]" in result.stderr  # steps_per_run=, the first hook in table order
    assert f'File "{script}", line 6' in result.stderr
