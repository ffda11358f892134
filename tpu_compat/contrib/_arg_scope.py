"""``arg_scope`` and ``add_arg_scope``: TF-Slim's default arguments, as TF 1.15 kept them.

TF 1.15: tensorflow/tensorflow r1.15, tensorflow/contrib/framework/python/ops/
arg_scope.py (served as ``tf.contrib.framework.arg_scope``, ``tf.contrib.slim.
arg_scope`` and ``tensorflow.contrib.framework.python.ops.arg_scope``). The
semantics kept here:

* ``add_arg_scope(func)`` registers ``func`` by a key (``str`` of the undecorated
  function) with the names of its keyword arguments, and returns a wrapper that
  marks itself with the same key (``_key_op``); decorating twice keys the same.
* ``arg_scope([ops...], **kwargs)`` pushes a copy of the current scope in which
  each op's defaults are updated with ``kwargs`` (an inner scope overrides an
  outer one per argument); ``arg_scope(scope_dict)`` re-enters a scope returned
  by an earlier ``with arg_scope(...) as sc`` (kwargs must then be empty). An op
  not decorated raises ``ValueError``; anything but a list, tuple or dict raises
  ``TypeError``.
* A call of a decorated op takes the scope's arguments, overridden by the ones
  the call passes explicitly.

One difference, for the emulated TPU: the era kept one module-level stack. Here
each thread keeps its own pushes and, until it makes one, sees the main thread's
current scope: the emulated TPU builds each replica's ``model_fn`` in a thread of
its own (as MirroredStrategy does), and those builds interleave; in TF 1.15 the
TPU rewrite ran ``model_fn`` in the caller's thread, so a replica sees what the
program's own thread set, as it did then.
"""

import contextlib
import functools
import threading

__all__ = ["add_arg_scope", "arg_scope", "arg_scope_func_key", "arg_scoped_arguments",
           "current_arg_scope", "has_arg_scope"]

# key -> the keyword argument names of the decorated function (TF 1.15's
# _DECORATED_OPS).
_DECORATED_OPS = {}
_MAIN_STACK = [{}]
_LOCAL = threading.local()


def _stack():
    """The pushes of this thread (the main thread's stack is _MAIN_STACK)."""
    if threading.current_thread() is threading.main_thread():
        return _MAIN_STACK
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


def current_arg_scope():
    """The current scope: ``{op key: {argument: value}}``."""
    stack = _stack()
    return stack[-1] if stack else _MAIN_STACK[-1]


def arg_scope_func_key(op):
    """The key an op is registered under (TF 1.15: ``getattr(op, '_key_op', str(op))``)."""
    return getattr(op, "_key_op", str(op))


def _kwarg_names(func):
    """The names of ``func``'s arguments that have defaults (TF 1.15's ``_kwarg_names``)."""
    defaults = func.__defaults__ or ()
    code = func.__code__
    return code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]


def _op_name(op):
    return f"{getattr(op, '__module__', '?')}.{getattr(op, '__name__', repr(op))}"


@contextlib.contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """Sets default keyword arguments of the given ``@add_arg_scope`` ops.

    ``list_ops_or_scope`` is a list or tuple of decorated ops, or a scope (the
    dict an earlier ``with arg_scope(...) as sc`` yielded) to enter again.
    Yields the new current scope.
    """
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError(
                "arg_scope: when re-entering a scope given as a dict, no keyword "
                f"arguments may be passed (got {sorted(kwargs)})")
        scope = list_ops_or_scope.copy()
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError(
                "arg_scope: list_ops_or_scope must be a list or tuple of ops, or a scope "
                f"dict returned by an earlier arg_scope; got {type(list_ops_or_scope).__name__}")
        scope = current_arg_scope().copy()
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(
                    f"arg_scope: {_op_name(op)} is not decorated with @add_arg_scope "
                    "(only decorated ops take arguments from an arg_scope)")
            key = arg_scope_func_key(op)
            updated = dict(scope.get(key, {}))
            updated.update(kwargs)
            scope[key] = updated
    stack = _stack()
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()


def add_arg_scope(func):
    """Decorates ``func`` so that ``arg_scope`` can set its keyword arguments."""
    key = arg_scope_func_key(func)

    @functools.wraps(func)
    def func_with_args(*args, **kwargs):
        defaults = current_arg_scope().get(key)
        if defaults:
            merged = dict(defaults)
            merged.update(kwargs)
            kwargs = merged
        return func(*args, **kwargs)

    if key not in _DECORATED_OPS:
        _DECORATED_OPS[key] = _kwarg_names(getattr(func, "__wrapped__", func))
    func_with_args._key_op = key  # pylint: disable=protected-access
    return func_with_args


def has_arg_scope(func):
    """Whether ``func`` was decorated with ``@add_arg_scope``."""
    return arg_scope_func_key(func) in _DECORATED_OPS


def arg_scoped_arguments(func):
    """The keyword argument names ``arg_scope`` can set for the decorated ``func``."""
    if not has_arg_scope(func):
        raise ValueError(f"arg_scoped_arguments: {_op_name(func)} is not decorated "
                         "with @add_arg_scope")
    return _DECORATED_OPS[arg_scope_func_key(func)]
