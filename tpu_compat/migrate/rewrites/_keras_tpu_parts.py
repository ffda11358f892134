"""What keras_tpu_scope.py and _keras_tpu_branch.py share: finding a statement's block,
the names statements bind and read, and how the module can name TF 2's bring-up."""

import libcst as cst

from tpu_compat.migrate import imports
from tpu_compat.migrate.rewrites._edit import arguments_by_name

V1 = "tensorflow.compat.v1"
DISTRIBUTION_STRATEGY = "TPC161"
_CONNECT = "tensorflow.config.experimental_connect_to_cluster"
_INITIALIZE = "tensorflow.tpu.experimental.initialize_tpu_system"
_BLOCKS = (cst.Module, cst.IndentedBlock)


def resolver_of(strategy_call):
    """(the resolver argument, None), or (None, why it is not rewritten)."""
    # r1.13: TPUDistributionStrategy(tpu_cluster_resolver=None, using_single_core=False).
    strategy_args = arguments_by_name(strategy_call, ("tpu_cluster_resolver", "using_single_core"))
    if strategy_args is None or "tpu_cluster_resolver" not in strategy_args:
        return None, "TPUDistributionStrategy without a resolver argument"
    single = strategy_args.get("using_single_core")
    if single is not None and not (isinstance(single, cst.Name) and single.value == "False"):
        return None, ("using_single_core: one core of the TPU; TF 2's TPUStrategy needs a "
                      "device assignment for that")
    return strategy_args["tpu_cluster_resolver"], None


def line(code):
    return cst.parse_statement(code)


def assigned_name(statement, call):
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return assign.targets[0].target.value
    return None


def home(planner, statement):
    """The block (Module or IndentedBlock) whose body holds ``statement``, and its index."""
    homes = getattr(planner, "_keras_tpu_homes", None)
    if homes is None:
        homes = {}
        if planner.module is not None:
            planner.module.visit(_Homes(homes))
        planner._keras_tpu_homes = homes  # pylint: disable=protected-access
    return homes.get(id(statement), (None, None))


class _Homes(cst.CSTVisitor):
    def __init__(self, homes):
        super().__init__()
        self.homes = homes

    def on_visit(self, node):
        if isinstance(node, _BLOCKS):
            for index, child in enumerate(node.body):
                self.homes[id(child)] = (node, index)
        return True


def stored(node):
    """Names a statement binds (assignment targets, loop and with targets, defs, imports)."""
    names = set()

    class Visitor(cst.CSTVisitor):
        def visit_AssignTarget(self, target):
            names.update(n.value for n in all_names(target.target))

        def visit_AnnAssign(self, assign):
            names.update(n.value for n in all_names(assign.target))

        def visit_AugAssign(self, assign):
            names.update(n.value for n in all_names(assign.target))

        def visit_For(self, loop):
            names.update(n.value for n in all_names(loop.target))

        def visit_AsName(self, asname):
            names.update(n.value for n in all_names(asname.name))

        def visit_FunctionDef(self, definition):
            names.add(definition.name.value)

        def visit_ClassDef(self, definition):
            names.add(definition.name.value)

        def visit_NamedExpr(self, expression):
            names.update(n.value for n in all_names(expression.target))

        def visit_Global(self, statement):
            names.update(n.name.value for n in statement.names)

    node.visit(Visitor())
    return names


def all_names(node):
    found = []

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, name):
            found.append(name)

        def visit_Attribute(self, attribute):
            attribute.value.visit(self)  # `a.b` reads a, not b
            return False

    node.visit(Visitor())
    return found


def last_assignment(statements, name):
    for index in range(len(statements) - 1, -1, -1):
        statement = statements[index]
        if name in stored(statement):
            if (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                    and isinstance(statement.body[0], cst.Assign)):
                return index
            return None
    return None


def compile_after(body, index, names):
    """The first later statement ``<model or converted>.compile(...)``, else ``index - 1``."""
    for j in range(index + 1, len(body)):
        statement = body[j]
        if (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Expr)
                and isinstance(statement.body[0].value, cst.Call)):
            func = statement.body[0].value.func
            if (isinstance(func, cst.Attribute) and func.attr.value == "compile"
                    and isinstance(func.value, cst.Name) and func.value.value in names):
                return j
        if names[0] in stored(statement) or names[1] in stored(statement):
            break
    return index - 1


def is_import(statement):
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)


def spellings(site):
    visible = dict(site.visible)
    root = site.written.split(".", 1)[0]
    if site.root_path:
        visible[root] = site.root_path
    # A TF 1.x program runs its `import tensorflow` as compat.v1 (`tpu-compat run
    # --tf1`): spell what both bindings have (tf.compat.v2.X where needed).
    visible = {name: V1 if path == "tensorflow" else path for name, path in visible.items()}
    names = {}
    for key, path in (("strategy", "tensorflow.distribute.TPUStrategy"),
                      ("connect", _CONNECT), ("initialize", _INITIALIZE)):
        spelled = imports.spell(path, visible, prefer=(root,), through_v2=True)
        if spelled is None:
            return None
        names[key] = spelled
    return names


def names_in(module):
    return {name.value for name in all_names(module)} if module is not None else set()


def fresh(base, taken):
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}_{number}"
    taken.add(name)
    return name


def function_of(planner, statement):
    """The innermost ``def`` around ``statement``, or None at module level."""
    functions = getattr(planner, "_keras_tpu_functions", None)
    if functions is None:
        functions = {}
        stack = [None]

        class Visitor(cst.CSTVisitor):
            def visit_FunctionDef(self, node):
                stack.append(node)

            def leave_FunctionDef(self, original_node):
                stack.pop()

            def visit_SimpleStatementLine(self, node):
                functions[id(node)] = stack[-1]

        if planner.module is not None:
            planner.module.visit(Visitor())
        planner._keras_tpu_functions = functions  # pylint: disable=protected-access
    return functions.get(id(statement))
