"""Issue 35: the era's `distutils.version.LooseVersion(tf.__version__) < '1.14'`
(distutils is gone in Python 3.12) made packaging's, only where the comparison
keeps its value on every TensorFlow the migrated program runs on; a TODO
naming why everywhere else. Each as (before, after); the values of the
rewritten comparisons checked against distutils' own on TF 2.21-era versions."""

import itertools
import types
import warnings

import pytest
from migrate_check import assert_rewritten, assert_todo, upgraded as _upgrade

from tpu_compat.migrate import upgrade

TF = "import tensorflow as tf\n"


REWRITES = [
    # the Colab's TF check (tensorflow/tpu tools/colab/fashion_mnist.ipynb)
    ("import distutils\n" + TF + "if distutils.version.LooseVersion(tf.__version__) < '1.14':\n"
     "    raise Exception('This notebook is compatible with TensorFlow 1.14 or higher.')\n",
     "import packaging.version\n" + TF + "if packaging.version.parse(tf.__version__) < "
     "packaging.version.parse('1.14'):\n"
     "    raise Exception('This notebook is compatible with TensorFlow 1.14 or higher.')\n"),
    # StrictVersion on both sides, tf.version.VERSION, the literal on the left; two uses
    # `import distutils.version` (libcst records `distutils.version` on the Attribute)
    ("import distutils.version\n" + TF + "old = distutils.version.LooseVersion(tf.__version__) "
     "!= '1.15.0'\n",
     "import packaging.version\n" + TF + "old = packaging.version.parse(tf.__version__) "
     "!= packaging.version.parse('1.15.0')\n"),
    ("import distutils  # versions\n" + TF
     + "new = distutils.version.StrictVersion(tf.version.VERSION) >= "
       "distutils.version.StrictVersion('2.0')\n"
       "old = '2.3.0' > distutils.version.LooseVersion(tf.__version__)\n",
     "import packaging.version  # versions\n" + TF
     + "new = packaging.version.parse(tf.version.VERSION) >= packaging.version.parse('2.0')\n"
       "old = packaging.version.parse('2.3.0') > packaging.version.parse(tf.__version__)\n"),
]


@pytest.mark.parametrize("before,after", REWRITES, ids=[b for b, _ in REWRITES])
def test_rewrites(before, after):
    assert_rewritten(before, after)


def test_a_module_without_distutils_is_unchanged():
    source = TF + "import packaging.version\nok = packaging.version.parse(tf.__version__)\n"
    assert _upgrade(source) == (source, [])


TODOS = [
    # at or past the TF the program runs on, the orderings differ (2.21.0-rc0)
    ("import distutils\n" + TF + "ok = distutils.version.LooseVersion(tf.__version__) >= '2.21'\n",
     "not older than TF 2.21"),
    ("import distutils\n" + TF + "ok = distutils.version.LooseVersion(tf.__version__) < '1.14rc1'\n",
     "not a plain release"),
    ("import distutils\nimport numpy as np\n"
     "ok = distutils.version.LooseVersion(np.__version__) < '1.14'\n", "other than TensorFlow's"),
    ("import distutils\n" + TF + "v = distutils.version.LooseVersion(tf.__version__)\n",
     "not compared with a literal"),
    ("import distutils\n" + TF + "ok = distutils.version.LooseVersion(tf.__version__) < minimum\n",
     "not a string literal"),
    ("from distutils.version import LooseVersion\n", "binds the class itself"),
    # one use that cannot be rewritten keeps the import, so none is rewritten
    ("import distutils\n" + TF + "a = distutils.version.LooseVersion(tf.__version__) < '1.14'\n"
     "b = distutils.version.LooseVersion(tf.__version__) < '3.0'\n",
     "more than TensorFlow-version comparisons"),
]


@pytest.mark.parametrize("before,why", TODOS, ids=[b for b, _ in TODOS])
def test_todos(before, why):
    out, outcomes = assert_todo(before, "TPC201", why)
    assert all(o.action == upgrade.TODO for o in outcomes), outcomes  # TPC201's alone
    assert "packaging" not in out.split("TPC201")[0]


# TensorFlow versions a migrated program can see: releases, candidates and
# nightly builds from 2.21 on, as tf.__version__ spells them.
TF_VERSIONS = ("2.21.0", "2.21.0-rc0", "2.21.1", "2.22.0-rc1", "2.22.0-dev20251201", "3.0.0")
LITERALS = ("1.13", "1.14", "1.15.0", "2.0", "2.0.0", "2.3", "2.20.1")
OPERATORS = ("<", "<=", ">", ">=", "==", "!=")


@pytest.mark.filterwarnings("ignore:distutils Version classes:DeprecationWarning")
def test_rewritten_comparisons_keep_their_value():
    """Each rewritten comparison has the value distutils' LooseVersion gives, for
    every TF version above (Python 3.11 still has distutils to ask)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import distutils.version  # noqa: F401  (the era's module, for the reference)
        import distutils
    import packaging.version
    for literal, operator in itertools.product(LITERALS, OPERATORS):
        before = (f"import distutils\n{TF}"
                  f"ok = distutils.version.LooseVersion(tf.__version__) {operator} '{literal}'\n")
        after, outcomes = _upgrade(before)
        assert {o.action for o in outcomes} == {upgrade.REWRITTEN}, (before, outcomes)
        for version in TF_VERSIONS:
            tf = types.SimpleNamespace(__version__=version)
            expected = {"distutils": distutils, "tf": tf}
            got = {"packaging": packaging, "tf": tf}
            exec(before.split(TF)[1], expected)  # pylint: disable=exec-used
            exec(after.split(TF)[1], got)  # pylint: disable=exec-used
            assert got["ok"] == expected["ok"], (version, operator, literal, after)
