"""The table of legacy APIs, in two modules: ``schema`` (what a record is) and
``records`` (the records). Import it as :mod:`tpu_compat.legacy_api`, which
re-exports both."""
