"""The table of legacy APIs: well-formed, and the generated docs are current."""

import os
import re

import pytest

from tpu_compat import legacy_api
from conftest import REPO_ROOT, check_ok, run_cli


def test_rule_ids_are_unique_and_well_formed():
    rules = [record.rule for record in legacy_api.RECORDS]
    assert len(rules) == len(set(rules))
    assert all(re.fullmatch(r"TPC\d{3}", rule) for rule in rules)


@pytest.mark.parametrize("record", legacy_api.RECORDS, ids=lambda r: r.rule)
def test_record_fields(record):
    assert record.kind in (legacy_api.KIND_SYMBOL, legacy_api.KIND_METHOD,
                           legacy_api.KIND_ARGUMENT, legacy_api.KIND_ATTRIBUTE)
    assert record.eras and set(record.eras) <= set(legacy_api.ERAS)
    assert record.replacement
    message = record.warning_message()
    assert record.api in message and record.replacement in message
    assert message.endswith(f"[{record.rule}]")


def test_get_unknown_rule_lists_known_ones():
    with pytest.raises(KeyError, match="unknown legacy-API rule 'TPC999'; known: TPC001"):
        legacy_api.get("TPC999")


@pytest.mark.requires_tf
def test_present_in_installed_tf(tpu8):
    del tpu8
    presence = {r.rule: legacy_api.present_in_installed(r) for r in legacy_api.RECORDS}
    # Measured on TF 2.21: experimental_run_v2 and the V2 numpy dataset are gone,
    # the TF 1.x iterator API survives on compat.v1 strategies.
    assert presence["TPC001"] is False
    assert presence["TPC004"] is False
    assert presence["TPC009"] is True
    assert presence["TPC013"] is False
    assert presence["TPC002"] is None


@pytest.mark.requires_tf
def test_present_in_installed_ignores_methods_tpu_compat_added(tpu8):
    del tpu8
    import tpu_compat
    with tpu_compat.install():
        assert legacy_api.present_in_installed(legacy_api.get("TPC001")) is False


@pytest.mark.requires_tf
def test_compatibility_doc_is_current():
    result = check_ok(run_cli("matrix", "--format", "markdown"))
    with open(os.path.join(REPO_ROOT, "docs", "compatibility.md"), encoding="utf-8") as f:
        checked_in = f.read()
    assert checked_in == result.stdout, (
        "docs/compatibility.md is stale; regenerate it with: "
        "python -m tpu_compat matrix --format markdown > docs/compatibility.md")


# -- every record carries its run-time hook -----------------------------------------

_FIELDS = dict(rule="TPC999", api="Strategy.new_legacy_thing", kind=legacy_api.KIND_METHOD,
               name="new_legacy_thing", eras=("1.15",), removed_in="2.0",
               replacement="strategy.modern_thing()")


def test_a_record_without_a_hook_is_refused():
    with pytest.raises(ValueError, match="TPC999 has no run-time hook"):
        legacy_api.LegacyAPI(**_FIELDS)
    with pytest.raises(ValueError, match="TPC999 has no run-time hook"):
        legacy_api.LegacyAPI(**_FIELDS, hook="tpu_compat.runtime.adapter:X.new_legacy_thing")
    record = legacy_api.LegacyAPI(**_FIELDS, hook=legacy_api.not_observable(
        "only the scanner can see it"))
    assert record.hook.describe() == "never: only the scanner can see it"


@pytest.mark.parametrize("make, message", [
    (lambda: legacy_api.Hook("sometimes", ("m:C.f",)), "allowed values: call"),
    (lambda: legacy_api.calls(), "needs at least one target"),
    (lambda: legacy_api.calls("tpu_compat.runtime.adapter.CompatStrategyMixin.f"),
     "must read 'module:Class.member'"),
    (lambda: legacy_api.Hook(legacy_api.HOOK_ARGUMENT, ("m:C.f",)), "needs argument"),
    (lambda: legacy_api.not_observable(""), "needs a reason"),
])
def test_malformed_hooks_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_an_api_cannot_be_removed_in_one_of_its_own_eras():
    with pytest.raises(ValueError, match="removed in TF 1.15 cannot also be an API of TF 1.15"):
        legacy_api.LegacyAPI(**dict(_FIELDS, removed_in="1.15"),
                             hook=legacy_api.calls("m:C.f"))


def test_experimental_initialize_and_finalize_are_tf_1_13_apis():
    # TF 1.13's tf.distribute.Strategy had them; the TF 1.14 API docs no longer do.
    for rule in ("TPC013", "TPC014"):
        record = legacy_api.get(rule)
        assert record.eras == ("1.13",) and record.removed_in == "1.14"
        assert "is a TF 1.13 API (removed in TF 1.14)" in record.warning_message()


@pytest.mark.requires_tf
def test_matrix_says_not_probed_where_no_probe_ran():
    from tpu_compat.commands import matrix
    rows = {line.split(" | ")[0].strip("| "): line
            for line in matrix.markdown().splitlines() if line.startswith("| TPC")}
    assert " | not probed | when `axis` is omitted | " in rows["TPC002"]
    assert " | no | on call | " in rows["TPC001"]
    assert not any(" changed " in row for row in rows.values())


def test_legacy_api_offers_every_public_name_of_schema_and_records():
    # The table is split into a schema and a records module; `legacy_api` is
    # its one public name and must keep offering everything either defines.
    from tpu_compat.legacy import records, schema
    for module in (schema, records):
        for name in module.__all__:
            assert getattr(legacy_api, name) is getattr(module, name), name
    for name in legacy_api.__all__:
        assert hasattr(legacy_api, name), name
    assert legacy_api.get("TPC001") is records.RECORDS[0]
