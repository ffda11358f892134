"""Configuration values: every bad value names its variable and the allowed values.

The parsers (tpu_compat/_config.py) as the settings table uses them; the
table itself is tested in test_settings.py.
"""

import pytest

from tpu_compat import _config, settings


@pytest.mark.parametrize("value,expected", [("", "auto"), ("auto", "auto"), (" CPU ", "cpu"),
                                            ("tpu", "tpu"), ("gpu", "gpu")])
def test_backend_choice_accepts_allowed_values(value, expected):
    assert settings.read("backend", {"TPU_COMPAT_BACKEND": value}) == expected


def test_backend_choice_names_variable_and_allowed_values():
    with pytest.raises(_config.ConfigError) as error:
        settings.read("backend", {"TPU_COMPAT_BACKEND": "fpga"})
    assert str(error.value) == (
        "TPU_COMPAT_BACKEND='fpga' is not valid; allowed values: auto, tpu, gpu, cpu")


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "eight", "1e3"])
def test_num_replicas_rejects_non_positive_ints(value):
    with pytest.raises(_config.ConfigError,
                       match=rf"^TPU_COMPAT_NUM_REPLICAS='{value}' is not valid; "
                             r"expected a positive integer$"):
        settings.read("num_replicas", {"TPU_COMPAT_NUM_REPLICAS": value})


def test_num_replicas_default_and_value():
    assert settings.read("num_replicas", {}) is None
    assert settings.read("num_replicas", {"TPU_COMPAT_NUM_REPLICAS": " 4 "}) == 4


def test_warning_policy_values():
    assert settings.read("warnings", {}) is None
    assert settings.read("warnings", {"TPU_COMPAT_WARNINGS": "Error"}) == "error"
    with pytest.raises(_config.ConfigError,
                       match="TPU_COMPAT_WARNINGS='loud' is not valid; allowed values: "
                             "once, always, error, ignore"):
        settings.read("warnings", {"TPU_COMPAT_WARNINGS": "loud"})


def test_positive_int_rejects_bool():
    with pytest.raises(_config.ConfigError, match="num_replicas=True"):
        _config.positive_int("num_replicas", True)
