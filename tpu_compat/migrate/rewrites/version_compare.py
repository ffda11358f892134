"""``version_compare``: distutils' version classes on TensorFlow's version, in
packaging's spelling.

``distutils`` is gone in Python 3.12 (PEP 632). The era's programs checked the
TF they ran on with it::

    import distutils  # or: import distutils.version
    if distutils.version.LooseVersion(tf.__version__) < '1.14': ...

which becomes ``packaging.version.parse(tf.__version__) <
packaging.version.parse('1.14')``, with the ``import distutils`` made ``import
packaging.version`` (packaging is one of TensorFlow's own dependencies).

The two orderings are not the same in general: LooseVersion compares lists of
parts, so '2.0.0' > '2.0' and '2.21.0-rc0' > '2.21', where packaging says equal
and earlier (PEP 440). They agree on every comparison here because the
migrated program runs on TF 2.21 or later (release, candidate or dev build)
and the literal is a plain release older than 2.21: both orderings put every
such TF above it, so ``<``, ``<=``, ``>``, ``>=``, ``==`` and ``!=`` all keep
their value. Anything else (a version other than TensorFlow's, a literal at
or past 2.21 or not a plain release, ``from distutils.version import``, a
``distutils`` used for more than these comparisons) keeps a TODO saying which.
"""

import re

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_VERSION_COMPARE

# The oldest TensorFlow a migrated program runs on: every literal below it is
# ordered the same way against it by LooseVersion, StrictVersion and packaging.
TARGET_TF = (2, 21)
_RELEASE = re.compile(r"\d+(?:\.\d+){0,2}")
# How code names the running TF's version: tf.__version__, tf.VERSION (TF 1.x),
# tf.version.VERSION, through any TensorFlow module a name is bound to.
_TF_VERSION_TAILS = ("__version__", "VERSION", "version.VERSION")
_OPERATORS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual,
              cst.Equal, cst.NotEqual)
_DISTUTILS = "distutils"
_DISTUTILS_IMPORTS = (_DISTUTILS, _DISTUTILS + ".version")  # both bind `distutils`


def plan(planner, finding, rewrite):
    site = finding.site
    if site.kind == "import":
        return ("`from distutils.version import` binds the class itself: "
                "use packaging.version.parse on both sides by hand")
    if planner.module is None:
        return "the module is not available to check its other distutils uses"
    problem = _rewritable(site, site.call)
    if problem:
        return problem
    imports_of, uses = _distutils_bindings(planner.module)
    if len(imports_of) != 1:
        return ("distutils is imported more than once (or not as `import distutils` / "
                "`import distutils.version`)")
    for use in uses:
        if not any(use is _root(f.site.node) and not _rewritable(f.site, f.site.call)
                   for f in planner.findings if f.record is finding.record
                   and f.site is not None and f.site.kind == "symbol"):
            return ("`distutils` is used for more than TensorFlow-version comparisons "
                    "here; its import cannot become packaging's")
    comparison = _comparison_of(site.statement, site.call)
    others = tuple(_comparison_of(f.site.statement, f.site.call) for f in planner.findings
                   if f.record is finding.record and f.site is not site
                   and f.site.kind == "symbol")
    line = imports_of[0]
    planner.edit(finding, Edit(comparison, cst.Comparison,
                               lambda original, updated: _packaging(updated, rewrite.to), KIND,
                               requires=tuple(o for o in others if o is not comparison)
                               or None,
                               also=Edit(line, cst.Import, _import_packaging, KIND)))
    for other in planner.findings:
        # The other side's own class call (`... < LooseVersion('1.14')`) goes
        # with this comparison's edit.
        if (other is not finding and other.record is finding.record
                and other.site is not None and other.site.kind == "symbol"
                and _comparison_of(other.site.statement, other.site.call) is comparison):
            planner.cover(other, planner.edit_of(site))
    return None


def _rewritable(site, call):
    """Why ``call`` (``LooseVersion(x)``) is not a rewritable comparison, or ''."""
    if call is None or call.func is not site.node:
        return "a reference to the class, not a call"
    if not (site.written.startswith(_DISTUTILS + ".version.")):
        return "not written as distutils.version.<class>"
    comparison = _comparison_of(site.statement, call)
    if comparison is None:
        return "not compared with a literal version in one comparison"
    left, right = comparison.left, comparison.comparisons[0].comparator
    version_call = left if _is_class_call(left) and _tf_version(site, left) else right
    if not (_is_class_call(version_call) and _tf_version(site, version_call)):
        return "compares a version other than TensorFlow's (tf.__version__)"
    literal = _literal_of(right if version_call is left else left)
    if literal is None:
        return "the other side is not a string literal version"
    if not _RELEASE.fullmatch(literal):
        return f"{literal!r} is not a plain release (digits and dots)"
    parts = tuple(int(p) for p in literal.split("."))
    if parts[:2] >= TARGET_TF:
        return (f"{literal!r} is not older than TF {TARGET_TF[0]}.{TARGET_TF[1]}: distutils "
                f"and packaging order TF releases around it differently")
    return ""


def _comparison_of(statement, call):
    """The one-operator Comparison in ``statement`` with ``call`` as an operand, or None."""
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Comparison(self, node):
            if (len(node.comparisons) == 1
                    and isinstance(node.comparisons[0].operator, _OPERATORS)
                    and call in (node.left, node.comparisons[0].comparator)):
                found.append(node)

    statement.visit(_Find())
    return found[0] if found else None


def _is_class_call(node):
    return (isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].keyword is None
            and node.args[0].star == "" and _dotted(node.func) in (
                f"{_DISTUTILS}.version.LooseVersion", f"{_DISTUTILS}.version.StrictVersion"))


def _tf_version(site, call):
    """Whether ``call``'s argument names the running TensorFlow's version."""
    text = _dotted(call.args[0].value)
    if not text or "." not in text:
        return False
    root, rest = text.split(".", 1)
    module = site.visible.get(root)
    return bool(module and module.split(".", 1)[0] == "tensorflow"
                and any(rest == tail or rest.endswith("." + tail)
                        for tail in _TF_VERSION_TAILS))


def _literal_of(node):
    """The string a literal side (``'1.14'`` or ``LooseVersion('1.14')``) holds, or None."""
    if _is_class_call(node):
        node = node.args[0].value
    if isinstance(node, cst.SimpleString) and node.prefix.lower() in ("", "u"):
        return node.evaluated_value
    return None


def _dotted(node):
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        owner = _dotted(node.value)
        return f"{owner}.{node.attr.value}" if owner else None
    return None


def _root(node):
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


def _distutils_bindings(module):
    """(``import distutils`` statements, other Name uses of ``distutils``) in ``module``."""
    statements, uses = [], []

    class _Find(cst.CSTVisitor):
        def visit_Import(self, node):
            if any(_dotted(a.name) in _DISTUTILS_IMPORTS and a.asname is None
                   for a in node.names):
                statements.append(node)
            return False

        def visit_ImportFrom(self, node):
            return False

        def visit_Name(self, node):
            if node.value == _DISTUTILS:
                uses.append(node)

    module.visit(_Find())
    return statements, uses


def _packaging(comparison, parse):
    """Both sides of ``comparison`` through ``parse``: the class call's argument, or the literal."""
    def side(node):
        value = node.args[0].value if _is_class_call(node) else node
        return cst.Call(cst.parse_expression(parse), args=[cst.Arg(value)],
                        lpar=node.lpar, rpar=node.rpar)

    target = comparison.comparisons[0]
    return comparison.with_changes(left=side(comparison.left),
                                   comparisons=[target.with_changes(
                                       comparator=side(target.comparator))])


def _import_packaging(original, updated):
    """``import distutils[.version]`` -> ``import packaging.version`` (its only uses are rewritten)."""
    del original
    names = [a.with_changes(name=cst.parse_expression("packaging.version"))
             if _dotted(a.name) in _DISTUTILS_IMPORTS else a for a in updated.names]
    return updated.with_changes(names=names)
