"""``Dense(-1)``: a placeholder size that the program replaces before ``build``.

TF 2.0-2.4's ``Dense.__init__`` (tensorflow/python/keras/layers/core.py) kept
``units`` as given (``self.units = int(units) if not isinstance(units, int)
else units``) and checked nothing, so research code made a layer with a
placeholder size (``Dense(-1)``) and set ``layer.units`` in its parent's
``build``, once the input width was known. tf_keras 2.21 refuses a negative
``units`` in ``__init__`` ("Received an invalid value for `units`").

``install()`` wraps tf_keras's ``Dense.__init__``: a negative integer ``units``
is accepted and kept, as the era kept it; a layer still built with it fails
in ``build`` as it did then (a negative dimension). Anything else (0, a
positive size, a non-number) is tf_keras's own behaviour.
"""

import functools
import numbers

__all__ = ["lenient_units_init", "patch_tf_keras"]


def _is_placeholder(units):
    return (isinstance(units, numbers.Integral) and not isinstance(units, bool)
            and units < 0)


def lenient_units_init(init):
    """``Dense.__init__`` accepting a negative placeholder ``units`` (TF 2.0-2.4)."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if args and _is_placeholder(args[0]):
            placeholder, args = int(args[0]), (0,) + tuple(args[1:])
        elif not args and _is_placeholder(kwargs.get("units")):
            placeholder, kwargs = int(kwargs["units"]), dict(kwargs, units=0)
        else:
            return init(self, *args, **kwargs)
        init(self, *args, **kwargs)
        self.units = placeholder
        return None

    return __init__


def patch_tf_keras(state):
    """Wraps tf_keras's ``Dense.__init__`` through ``state`` (undone by uninstall)."""
    from tf_keras.src.layers.core import dense  # pylint: disable=import-outside-toplevel
    state.replace(dense.Dense, "__init__", lenient_units_init(dense.Dense.__init__))
