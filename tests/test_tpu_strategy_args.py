"""One predicate for "which TPUStrategy does this call mean", shared by the
run-time router and the scanner: a table of argument shapes, checked against
both (the router without TensorFlow's graph mode, which it adds on top)."""

import pytest

from tpu_compat import tpu_strategy_args as args
from tpu_compat.migrate import scan, upgrade

INT, OTHER, UNKNOWN = args.INTEGER, args.OTHER, args.UNKNOWN


@pytest.mark.parametrize("positional,keywords,expected", [
    ([OTHER], [], args.V2),
    ([OTHER], ["device_assignment"], args.V2),
    ([OTHER], ["steps_per_run"], args.V1),
    ([OTHER, INT], [], args.V1),
    ([OTHER, OTHER], [], args.V2),
    ([OTHER, UNKNOWN], [], None),
    ([OTHER, UNKNOWN, OTHER], [], args.V1),
    ([], ["tpu_cluster_resolver"], args.V2),
])
def test_the_predicate(positional, keywords, expected):
    assert args.experimental_tpu_strategy_class(positional, keywords) == expected


# (source arguments, the values the router sees, which class both must mean)
CALLS = [
    ("resolver", ("r",), {}, args.V2),
    ("resolver, 4", ("r", 4), {}, args.V1),
    ("resolver, -4", ("r", -4), {}, args.V1),
    ("resolver, steps_per_run=4", ("r",), {"steps_per_run": 4}, args.V1),
    ("resolver, None", ("r", None), {}, args.V2),
    ("resolver, 4, None", ("r", 4, None), {}, args.V1),
    ("resolver, device_assignment=da", ("r",), {"device_assignment": object()}, args.V2),
]


def _scanned_class(source_arguments):
    findings = scan.scan_text("import tensorflow as tf\nSTEPS = 4\n"
                              f"s = tf.distribute.experimental.TPUStrategy({source_arguments})\n")
    rules = {f.rule for f in findings}
    assert "TPC005" in rules
    return args.V1 if "TPC007" in rules else args.V2


@pytest.mark.parametrize("source,values,kwargs,expected", CALLS, ids=[c[0] for c in CALLS])
def test_scanner_and_router_agree(source, values, kwargs, expected):
    assert _scanned_class(source) == expected
    # The router's own argument classification, without TensorFlow.
    router_kinds = [args.INTEGER if isinstance(v, int) and not isinstance(v, bool)
                    else args.OTHER for v in values]
    assert args.experimental_tpu_strategy_class(router_kinds, kwargs) == expected


@pytest.mark.requires_tf
def test_router_uses_the_shared_predicate(monkeypatch):
    from tpu_compat.runtime import strategy_by_era, strategy_v1, strategy_v2
    for _, values, kwargs, expected in CALLS:
        want = (strategy_v1.CompatTPUStrategyV1 if expected == args.V1
                else strategy_v2.CompatExperimentalTPUStrategy)
        assert strategy_by_era.pick_class(values, kwargs) is want
    # ... and only it: whatever the predicate says, the router follows.
    monkeypatch.setattr(args, "experimental_tpu_strategy_class", lambda *a: args.V1)
    assert strategy_by_era.pick_class(("r",), {}) is strategy_v1.CompatTPUStrategyV1


def test_a_name_bound_to_an_int_is_steps_per_run():
    assert _scanned_class("resolver, STEPS") == args.V1


def test_an_unknown_second_argument_is_not_rewritten_but_explained():
    result = upgrade.upgrade_bytes("x.py", b"import tensorflow as tf\n"
                                   b"s = tf.distribute.experimental.TPUStrategy(r, da)\n")
    (outcome,) = result.outcomes
    assert outcome.action == upgrade.TODO
    text = result.output.decode()
    assert "experimental_device_assignment=" in text and "steps_per_run=" in text
    assert text.endswith("s = tf.distribute.experimental.TPUStrategy(r, da)\n")
