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


# 100000 and 2**31 replicas hung for minutes building devices; 1e23 overflowed.
@pytest.mark.parametrize("value", ["0", "-2", "2.5", "eight", "1e3", "4097", "100000",
                                   str(2**31), "99999999999999999999999",
                                   "\u0663", "\uff18", "1_0", "0x10"])
def test_num_replicas_rejects_what_is_not_1_to_4096(value):
    with pytest.raises(_config.ConfigError,
                       match=rf"^TPU_COMPAT_NUM_REPLICAS='{value}' is not valid; "
                             r"expected an integer from 1 to 4096$"):
        settings.read("num_replicas", {"TPU_COMPAT_NUM_REPLICAS": value})


def test_numbers_too_long_to_convert_are_refused_not_raised():
    # Python refuses int() of more than 4300 digits with a ValueError of its own.
    digits = "9" * 5000
    with pytest.raises(_config.ConfigError, match="expected an integer from 0 to 4294967295"):
        _config.seed("TPU_COMPAT_SEED", digits)
    with pytest.raises(_config.ConfigError, match="expected a positive number of seconds"):
        _config.positive_seconds("--timeout", 10**400)


def test_num_replicas_bound_is_the_documented_one():
    assert _config.MAX_REPLICAS == 4096
    assert settings.read("num_replicas", {"TPU_COMPAT_NUM_REPLICAS": "4096"}) == 4096
    assert "1 to 4096" in settings.row("num_replicas").values
    with pytest.raises(_config.ConfigError, match="^num_replicas=5000 is not valid"):
        _config.replica_count("num_replicas", 5000)


# numpy's seeding (and PYTHONHASHSEED, which regress and verify set) takes 0 to 2**32-1.
@pytest.mark.parametrize("value", ["-3", "4294967296", "99999999999999999999", "\u0663",
                                   "1.0", "seven"])
def test_seed_outside_numpys_range_is_refused(value):
    with pytest.raises(_config.ConfigError,
                       match=rf"^TPU_COMPAT_SEED='{value}' is not valid; "
                             r"expected an integer from 0 to 4294967295$"):
        settings.read("seed", {"TPU_COMPAT_SEED": value})


def test_seed_range_ends_are_accepted():
    assert settings.read("seed", {"TPU_COMPAT_SEED": "0"}) == 0
    assert settings.read("seed", {"TPU_COMPAT_SEED": "4294967295"}) == 2**32 - 1


@pytest.mark.parametrize("value", ["1e308", "inf", "nan", "86401", "\u0663", "\uff18",
                                   "0x10", "1_0", "0", "-1"])
def test_pod_timeout_is_finite_and_at_most_a_day(value):
    with pytest.raises(_config.ConfigError,
                       match=rf"^TPU_COMPAT_POD_TIMEOUT='{value}' is not valid; expected "
                             r"a positive number of seconds, at most 86400$"):
        settings.read("pod_timeout", {"TPU_COMPAT_POD_TIMEOUT": value})


@pytest.mark.parametrize("value,seconds", [("86400", 86400.0), (" 0.5 ", 0.5), ("1e2", 100.0),
                                           (".5", 0.5), ("3.", 3.0)])
def test_pod_timeout_accepts_decimal_seconds(value, seconds):
    assert settings.read("pod_timeout", {"TPU_COMPAT_POD_TIMEOUT": value}) == seconds


@pytest.mark.parametrize("name,value", [("TPU_COMPAT_NUM_HOSTS", "\u0663"),
                                        ("TPU_COMPAT_NUM_HOSTS", "\uff12"),
                                        ("TPU_COMPAT_POD_PORT", "\u0668\u0660\u0668\u0660"),
                                        ("TPU_COMPAT_POD_PORT", "99999")])
def test_other_numbers_take_ascii_digits_only(name, value):
    row = next(setting for setting in settings.ROWS if setting.variable == name)
    with pytest.raises(_config.ConfigError, match=rf"^{name}='{value}' is not valid; expected"):
        row.read({name: value})


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
