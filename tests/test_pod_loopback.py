"""Which pod servers are kept to loopback (docs/pods.md, Network exposure), without TensorFlow.

The end-to-end checks list the listening sockets of a running pod
(test_pod_faults.py, the spawned pod; test_pod_docs.py, workers started by
hand with a loopback TF_CONFIG). These check the decisions behind them: which
addresses count as loopback, that a real multi-machine worker keeps
TensorFlow's every interface (the docs say how to restrict it), and that where
the redirection cannot be made nothing is changed and the caller is told.
"""

import contextlib

import pytest

from tpu_compat.pod import loopback, worker


@pytest.mark.parametrize("host,expected", [
    ("localhost", True), ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True),
    ("[::1]", True), ("0:0:0:0:0:0:0:1", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.1", False), ("128.0.0.1", False),
    ("localhost.example.com", False), ("tpu-host-1", False), ("", False)])
def test_loopback_hosts(host, expected):
    assert loopback.is_loopback_host(host) is expected


def test_a_worker_of_a_real_multi_machine_pod_keeps_every_interface(monkeypatch):
    def refuse():
        raise AssertionError("a non-loopback worker must not be kept to loopback")

    monkeypatch.setattr(loopback, "loopback_only", refuse)
    assert isinstance(worker._listening_scope("10.0.0.1:2222"),  # pylint: disable=protected-access
                      contextlib.nullcontext)


def test_a_loopback_worker_is_kept_to_loopback(monkeypatch):
    scope = contextlib.nullcontext("kept")
    monkeypatch.setattr(loopback, "loopback_only", lambda: scope)
    for address in ("localhost:2222", "127.0.0.1:2222", "[::1]:2222"):
        assert worker._listening_scope(address) is scope  # pylint: disable=protected-access


def test_elsewhere_than_64_bit_linux_the_redirection_is_refused(monkeypatch):
    monkeypatch.setattr(loopback.sys, "platform", "darwin")
    monkeypatch.setattr(loopback, "_tensorflow_libraries",
                        lambda: pytest.fail("nothing is looked at, nothing changed"))
    with pytest.raises(loopback.LoopbackUnavailable, match="darwin .* is not 64-bit Linux"):
        with loopback.loopback_only():
            pytest.fail("the block must not run")
