"""``upgrade``'s keras_tpu_scope rewrite (issue 35): TF 1.13's
``tf.contrib.tpu.keras_to_tpu_model(model, strategy=TPUDistributionStrategy(r))``
becomes a TPUStrategy scope around the statements that build and compile the
model, in both orders the era wrote (compiled before the conversion, as the
Colabs did, or after it, as the AI Platform template did); anything else keeps a
TODO naming why. The whole program is in tests/test_migrate_keras_era.py."""

import migrate_check
import pytest
from migrate_check import assert_rewritten, assert_todo

from tpu_compat.migrate import upgrade

CONVERT = ("tpu_model = tf.contrib.tpu.keras_to_tpu_model(\n"
           "    model, strategy=tf.contrib.tpu.TPUDistributionStrategy(resolver))\n")
BRING_UP = ("tf.compat.v2.config.experimental_connect_to_cluster({r})\n"
            "tf.tpu.experimental.initialize_tpu_system({r})\n"
            "tpu_strategy = tf.compat.v2.distribute.TPUStrategy({r})\n")


def upgraded(source):
    out, outcomes = migrate_check.upgraded(source, "t.py")
    return out, {o.finding.rule: o for o in outcomes}


REWRITES = [
    # The Colab's order: built, compiled, converted; the conversion becomes an alias.
    ("import tensorflow as tf\n# the model\nmodel = build()\nmodel.compile('sgd', 'mse')\n"
     + CONVERT + "tpu_model.fit(x, y)\n",
     "import tensorflow as tf\n# the model\n" + BRING_UP.format(r="resolver")
     + "with tpu_strategy.scope():\n    model = build()\n    model.compile('sgd', 'mse')\n"
     "tpu_model = model\ntpu_model.fit(x, y)\n"),
    # The template's order, in a function, under compat.v1: compiled after the
    # conversion; the resolver's statement moves above the scope.
    ("import tensorflow.compat.v1 as tf\ndef train():\n    model = build()  # the model\n"
     "    r = tf.contrib.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)\n"
     "    tpu = tf.contrib.tpu.keras_to_tpu_model(model, tf.contrib.tpu.TPUDistributionStrategy(r))\n"
     "    tpu.compile('sgd', 'mse')\n    return tpu\n",
     "import tensorflow.compat.v1 as tf\ndef train():\n"
     "    r = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)\n"
     + "".join("    " + line + "\n" for line in BRING_UP.format(r="r").splitlines())
     + "    with tpu_strategy.scope():\n        model = build()  # the model\n"
     "        tpu = model\n        tpu.compile('sgd', 'mse')\n    return tpu\n"),
    # A resolver built in the call gets a name; a conversion onto the same name
    # needs no alias; names the module uses are not taken.
    ("import tensorflow as tf\ntpu_strategy = 1\nmodel = build()\n"
     "model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=tf.contrib.tpu."
     "TPUDistributionStrategy(\n    tf.contrib.cluster_resolver.TPUClusterResolver('')))\n",
     "import tensorflow as tf\ntpu_strategy = 1\n"
     "tpu_resolver = tf.distribute.cluster_resolver.TPUClusterResolver('')\n"
     + BRING_UP.format(r="tpu_resolver").replace("tpu_strategy =", "tpu_strategy_2 =")
     + "with tpu_strategy_2.scope():\n    model = build()\n"),
]


@pytest.mark.parametrize("before,after", REWRITES, ids=range(len(REWRITES)))
def test_rewrites(before, after):
    outcomes = assert_rewritten(before, after)  # nothing legacy is left
    assert {"TPC160", "TPC161"} <= {o.finding.rule for o in outcomes}


TODOS = [
    ("model = build()\ntpu_model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=tf.contrib"
     ".tpu.TPUDistributionStrategy(r, using_single_core=True))\n", "using_single_core"),
    ("model = build()\ns = tf.contrib.tpu.TPUDistributionStrategy(r)\n"
     "tpu_model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=s)\n",
     "not a TPUDistributionStrategy(...) built in the call"),
    ("def convert(model):\n    return tf.contrib.tpu.keras_to_tpu_model(model, strategy="
     "tf.contrib.tpu.TPUDistributionStrategy(r))\n", "not assigned to one name"),
    ("def convert(model):\n    tpu_model = tf.contrib.tpu.keras_to_tpu_model(model, strategy="
     "tf.contrib.tpu.TPUDistributionStrategy(r))\n    return tpu_model\n",
     "not built by a statement before this one in the same block"),
    # The resolver depends on the model, or the builder reads the resolver's name.
    ("model = build()\nr = make(model)\ntpu_model = tf.contrib.tpu.keras_to_tpu_model(model, "
     "strategy=tf.contrib.tpu.TPUDistributionStrategy(r))\n", "resolver's names"),
    ("r = 1\nmodel = build(r)\nr = 2\ntpu_model = tf.contrib.tpu.keras_to_tpu_model(model, "
     "strategy=tf.contrib.tpu.TPUDistributionStrategy(r))\n", "resolver's names"),
]


@pytest.mark.parametrize("body,reason", TODOS, ids=range(len(TODOS)))
def test_todos_say_why(body, reason):
    out, _ = assert_todo("import tensorflow as tf\n" + body, "TPC160", reason)
    assert "keras_to_tpu_model(" in out
    assert out.replace("# TODO(tpu_compat)", "\n# TODO").count("tpu_strategy") == 0


def test_modern_program_is_unchanged():
    source = ("import tensorflow as tf\nstrategy = tf.distribute.TPUStrategy(resolver)\n"
              "with strategy.scope():\n    model = build()\n    model.compile('sgd', 'mse')\n"
              "tpu_model = model\n")
    assert upgraded(source) == (source, {})


# The AI Platform template's form (cloudml-samples tpu_lstm_keras/trainer.py):
# the strategy in a variable, the conversion inside `if use_tpu:`, the model
# built before the branch and compiled after it.
BRANCH = ("import tensorflow as tf\ndef main(args):\n    model = build_model()\n\n"
          "    if args.use_tpu:\n        # over the TPU's cores\n"
          "        r = tf.contrib.cluster_resolver.TPUClusterResolver(args.tpu)\n"
          "        strategy = tf.contrib.tpu.TPUDistributionStrategy(r)\n"
          "        model = tf.contrib.tpu.keras_to_tpu_model(\n            model, strategy=strategy)\n\n"
          "    optimizer = make_optimizer()\n    model.compile(optimizer, 'mse')\n\n"
          "    model.fit(x, y)\n")
BRANCH_AFTER = (
    "import tensorflow as tf\ndef main(args):\n"
    "    strategy = tf.compat.v2.distribute.get_strategy()\n\n"
    "    if args.use_tpu:\n        # over the TPU's cores\n"
    "        r = tf.distribute.cluster_resolver.TPUClusterResolver(args.tpu)\n"
    "        tf.compat.v2.config.experimental_connect_to_cluster(r)\n"
    "        tf.tpu.experimental.initialize_tpu_system(r)\n"
    "        strategy = tf.compat.v2.distribute.TPUStrategy(r)\n\n"
    "    with strategy.scope():\n        model = build_model()\n"
    "        optimizer = make_optimizer()\n        model.compile(optimizer, 'mse')\n\n"
    "    model.fit(x, y)\n")


def test_branch_form_builds_the_strategy_up_front():
    outcomes = assert_rewritten(BRANCH, BRANCH_AFTER)
    assert {"TPC160", "TPC161"} <= {o.finding.rule for o in outcomes}


@pytest.mark.parametrize("change,reason", [
    # The strategy's name is read again after the branch.
    (("    model.fit(x, y)\n", "    model.fit(x, y)\n    print(strategy)\n"), "used elsewhere"),
    # The branch reads what the model's statements assign.
    (("    if args.use_tpu:\n", "    if model.built:\n"), "the branch reads or assigns"),
    # Converted onto another name: off the TPU that name would be unbound.
    (("        model = tf.contrib.tpu.keras_to_tpu_model(",
      "        tpu_model = tf.contrib.tpu.keras_to_tpu_model("), "own name"),
    # Compiled inside the branch, not after it.
    (("    optimizer = make_optimizer()\n    model.compile(optimizer, 'mse')\n", ""),
     "not compiled after the branch"),
    # Not the variable the conversion is given.
    (("        strategy = tf.contrib", "        other = tf.contrib"), "assigned to one name"),
])
def test_branch_form_todos_say_why(change, reason):
    source = BRANCH.replace(*change)
    assert source != BRANCH
    out, outcomes = upgraded(source)
    assert outcomes["TPC160"].action == upgrade.TODO
    assert reason in outcomes["TPC160"].detail
    assert "keras_to_tpu_model(" in out and "get_strategy" not in out


def test_branch_form_feeds_an_input_fn_per_core():
    """fit(input_fn) on the converted model: every core took its own batch, so the
    TPUStrategy model gets the dataset re-batched to that batch times the replicas
    (the numbers: tests/test_migrate_keras_era.py's whole program)."""
    source = ("def input_fn():\n    return make()\n"
              + BRANCH.replace("    model.fit(x, y)\n", "    model.fit(input_fn, steps_per_epoch=2)\n"))
    out, outcomes = upgraded(source)
    assert out.endswith(
        "    # keras_to_tpu_model fed each TPU core its own batch of input_fn()'s dataset\n"
        "    tpu_dataset = input_fn()\n    model.fit(tpu_dataset.unbatch().batch(\n"
        "        tf.compat.v2.nest.flatten(tpu_dataset.element_spec)[0].shape.as_list()[0]"
        " * strategy.num_replicas_in_sync, drop_remainder=True), steps_per_epoch=2)\n")
    assert outcomes["TPC160"].action == upgrade.REWRITTEN
    assert upgraded(out) == (out, {})


def test_sync_to_cpu_is_the_model_where_the_conversion_is_rewritten():
    # r1.13's sync_to_cpu copied the TPU weights into the CPU model; in a TPUStrategy
    # scope there is one model.
    source = (REWRITES[0][0] + "cpu_model = tpu_model.sync_to_cpu()\n")
    out, outcomes = upgraded(source)
    assert out == REWRITES[0][1] + "cpu_model = tpu_model\n"
    assert outcomes["TPC162"].action == upgrade.REWRITTEN
    # A receiver no rewritten conversion made, or a conversion kept as a TODO: TODO.
    for body, reason in (("cpu = other.sync_to_cpu()\n", "not a model a rewritten"),
                         (TODOS[0][0] + "cpu = tpu_model.sync_to_cpu()\n", "of this function is not rewritten")):
        out, outcomes = upgraded("import tensorflow as tf\n" + body)
        assert outcomes["TPC162"].action == upgrade.TODO
        assert reason in outcomes["TPC162"].detail and "sync_to_cpu()" in out


def test_branch_form_at_module_level_names_a_resolver_built_in_the_call():
    source = ("import tensorflow.compat.v1 as tf\nmodel = build()\nif FLAGS.use_tpu:\n"
              "    strategy = tf.contrib.tpu.TPUDistributionStrategy(\n"
              "        tf.contrib.cluster_resolver.TPUClusterResolver(FLAGS.tpu))\n"
              "    model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=strategy)\n"
              "model.compile('sgd', 'mse')\n")
    out, outcomes = upgraded(source)
    assert out == (
        "import tensorflow.compat.v1 as tf\nstrategy = tf.compat.v2.distribute.get_strategy()\n"
        "if FLAGS.use_tpu:\n"
        "    tpu_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(FLAGS.tpu)\n"
        + "".join("    " + line + "\n" for line in BRING_UP.format(r="tpu_resolver").replace(
            "tpu_strategy =", "strategy =").splitlines())
        + "with strategy.scope():\n    model = build()\n    model.compile('sgd', 'mse')\n")
    assert outcomes["TPC160"].action == upgrade.REWRITTEN
    assert upgraded(out) == (out, {})


def test_modern_branch_program_is_unchanged():
    source = ("import tensorflow as tf\nstrategy = tf.distribute.get_strategy()\n"
              "if use_tpu:\n    strategy = tf.distribute.TPUStrategy(resolver)\n"
              "with strategy.scope():\n    model = build()\n    model.compile('sgd', 'mse')\n"
              "model.fit(input_fn(), steps_per_epoch=2)\n")
    assert upgraded(source) == (source, {})
