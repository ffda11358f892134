"""``tf.contrib.training.HParams``: named hyperparameters with typed parsing.

TF 1.15's class, for programs that build and parse their hyperparameters with
it: typed ``add_hparam``/``set_hparam``, ``parse("a=1,b=[2,3]")``,
``override_from_dict``, ``values``, JSON round trips. Types are kept: a value
given as an int stays an int, a float accepts ints, lists keep their element
type.
"""

import json
import re

__all__ = ["HParams"]

_ASSIGNMENT = re.compile(r"\s*(?P<name>[A-Za-z_]\w*)\s*=\s*"
                         r"(?:\[(?P<list>[^\]]*)\]|(?P<value>[^,\[\]]*))\s*(?:,|$)")


def _cast(name, value, kind):
    """``value`` as ``kind`` (the type the parameter was declared with)."""
    if kind is bool:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("true", "1"):
                return True
            if lowered in ("false", "0"):
                return False
            raise ValueError(f"hparam {name!r}: cannot parse {value!r} as a bool")
        if isinstance(value, (bool, int)):
            return bool(value)
    elif kind is int:
        if isinstance(value, bool):
            raise ValueError(f"hparam {name!r} is an int; got the bool {value!r}")
        if isinstance(value, str):
            return int(value.strip())
        if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
            return int(value)
    elif kind is float:
        if isinstance(value, str):
            return float(value.strip())
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    else:
        return value
    raise ValueError(f"hparam {name!r} has type {kind.__name__}; cannot set it to "
                     f"{value!r} ({type(value).__name__})")


class HParams:
    """A set of named, typed hyperparameters (``hparams.learning_rate``)."""

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise ValueError("hparam_def (an HParamDef proto) is not supported by "
                             "tpu_compat's HParams; pass the values as keywords")
        self._types = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        # TF 1.15 refused only a name whose attribute is not None (r1.15
        # tensorflow/contrib/training/python/training/hparam.py, add_hparam:
        # ``if getattr(self, name, None) is not None``): a hyperparameter whose value
        # is None is added again, with the new value's type. The era's trainers rely
        # on it (tensorflow/tpu's amoeba_net.py: ``if getattr(hparams, name, None) is
        # None: hparams.add_hparam(name, value)`` for num_shards=None).
        if getattr(self, name, None) is not None:
            what = "hparam" if name in self._types else "attribute of HParams"
            raise ValueError(f"hparam name {name!r} is taken: an {what} with a value")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"hparam {name!r}: an empty list has no element type")
            self._types[name] = (type(value[0]), True)
        else:
            self._types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        if name not in self._types:
            raise ValueError(f"unknown hparam {name!r}; known: {sorted(self._types)}")
        kind, is_list = self._types[name]
        if is_list:
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"hparam {name!r} is a list; got {value!r}")
            setattr(self, name, [_cast(name, v, kind) for v in value])
        else:
            if isinstance(value, (list, tuple)):
                raise ValueError(f"hparam {name!r} is not a list; got {value!r}")
            setattr(self, name, _cast(name, value, kind) if value is not None else None)

    def del_hparam(self, name):
        if name in self._types:
            delattr(self, name)
            del self._types[name]

    def parse(self, values):
        """Sets parameters from ``"a=1,b=[2,3],c=x"`` (types as declared)."""
        position = 0
        values = values or ""
        updates = {}
        while position < len(values.rstrip()):
            match = _ASSIGNMENT.match(values, position)
            if match is None:
                raise ValueError(f"cannot parse hparams {values!r} at position "
                                 f"{position}: expected name=value")
            name = match.group("name")
            if name not in self._types:
                raise ValueError(f"unknown hparam {name!r} in {values!r}")
            if name in updates:
                raise ValueError(f"hparam {name!r} is set twice in {values!r}")
            if match.group("list") is not None:
                items = [item for item in match.group("list").split(",") if item.strip()]
                updates[name] = items
            else:
                updates[name] = match.group("value")
            position = match.end()
        for name, value in updates.items():
            self.set_hparam(name, value)
        return self

    def override_from_dict(self, values_dict):
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def set_model_structure(self, model_structure):
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def values(self):
        return {name: getattr(self, name) for name in self._types}

    def to_json(self, indent=None, separators=None, sort_keys=False):
        return json.dumps(self.values(), indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def parse_json(self, values_json):
        return self.override_from_dict(json.loads(values_json))

    def get(self, key, default=None):
        if key not in self._types:
            return default
        value = getattr(self, key)
        if default is not None and value is not None:
            kind, is_list = self._types[key]
            if isinstance(default, (list, tuple)) != is_list:
                raise ValueError(f"hparam {key!r}: default {default!r} does not "
                                 f"match its type")
            del kind
        return value

    def __contains__(self, key):
        return key in self._types

    def __str__(self):
        return str(sorted(self.values().items()))

    def __repr__(self):
        return f"HParams({self.values()!r})"
