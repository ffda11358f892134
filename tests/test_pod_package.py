"""The shape of tpu_compat/pod/ that docs/architecture.md promises.

* its modules form layers: each imports only the pod modules above it
  (config, errors, logs, worker, launch, faults, session), at module level or in a
  function, so there is no import circle through the pod;
* ``TF_CONFIG`` is read (parsed) in pod/config.py only, and the three
  readers' schemas answer from it;
* the backend getter starts no process: the pod is started by the explicit
  step (``backend.start_pod``) that install() takes;
* the resolver does not import the runner (the circle runner -> pod ->
  resolver -> runner is gone).
"""

import ast
import json
import os
import sys

import pytest

from conftest import REPO_ROOT, subprocess_env
from tpu_compat import _process
from tpu_compat.pod import config as pod_config

PACKAGE = os.path.join(REPO_ROOT, "tpu_compat")
POD_LAYERS = ("config", "errors", "loopback", "logs", "worker", "launch", "faults", "session")


def _module_name(path):
    relative = os.path.relpath(path, REPO_ROOT)[:-len(".py")].split(os.sep)
    if relative[-1] == "__init__":
        relative = relative[:-1]
    return ".".join(relative)


def _imported_modules(path, known):
    """Every tpu_compat module ``path`` imports, at module level or in functions."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                # `from tpu_compat.pod import config` imports the submodule;
                # `from tpu_compat.pod.errors import PodError`, the module.
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else node.module)
    return {name for name in found if name in known}


def _import_graph():
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(PACKAGE)
             for name in names if name.endswith(".py")]
    known = {_module_name(path) for path in paths}
    return {_module_name(path): _imported_modules(path, known) for path in paths}


def _reaches(graph, start, goal):
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module == goal:
            return True
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return False


def test_pod_modules_import_only_the_layers_above_them():
    graph = _import_graph()
    assert {m for m in graph if m.startswith("tpu_compat.pod.")} == {
        f"tpu_compat.pod.{name}" for name in POD_LAYERS}
    for rank, name in enumerate(POD_LAYERS):
        pod_imports = {m.rsplit(".", 1)[1] for m in graph[f"tpu_compat.pod.{name}"]
                       if m.startswith("tpu_compat.pod.")}
        assert pod_imports <= set(POD_LAYERS[:rank]), (name, pod_imports)


def test_no_import_circle_runs_through_the_pod_or_the_runner_and_resolver():
    graph = _import_graph()
    for name in POD_LAYERS:
        module = f"tpu_compat.pod.{name}"
        assert not any(_reaches(graph, imported, module) for imported in graph[module]), module
    assert "tpu_compat.runner" not in graph["tpu_compat.runtime.resolver"]
    assert not _reaches(graph, "tpu_compat.runtime.resolver", "tpu_compat.runner")


def test_tf_config_is_parsed_in_pod_config_only():
    readers = []
    for folder, _, names in os.walk(PACKAGE):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as source:
                    text = source.read()
                if "TF_CONFIG" in text and "json" in text:
                    readers.append(os.path.relpath(os.path.join(folder, name), PACKAGE))
    assert readers == [os.path.join("pod", "config.py")]


_TF_CONFIG_PARSERS = ("parse_tf_config", "cluster_task_count")


def _names_tf_config(node):
    return ((isinstance(node, ast.Constant) and node.value == pod_config.TF_CONFIG_VAR)
            or (isinstance(node, ast.Name) and node.id == "TF_CONFIG_VAR")
            or (isinstance(node, ast.Attribute) and node.attr == "TF_CONFIG_VAR"))


def _tf_config_reads(tree):
    """Lines that read TF_CONFIG from an environment, parse it, or have TF read it."""
    found = []
    names_it = any(_names_tf_config(node) for node in ast.walk(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            read = _names_tf_config(node.slice)  # environ["TF_CONFIG"]
        elif isinstance(node, ast.Compare):
            read = (_names_tf_config(node.left)  # "TF_CONFIG" in environ
                    and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops))
        elif isinstance(node, ast.Call):
            called = getattr(node.func, "attr", getattr(node.func, "id", None))
            read = ((called in ("get", "getenv") and node.args  # environ.get(...)
                     and _names_tf_config(node.args[0]))
                    or called in _TF_CONFIG_PARSERS  # pod/config's parser
                    or (names_it and called in ("load", "loads"))  # json.loads(...)
                    or called == "TFConfigClusterResolver")  # TensorFlow's reader
        else:
            read = False
        if read:
            found.append(node.lineno)
    return sorted(found)


def test_the_tf_config_read_check_sees_each_kind_of_read():
    source = ("import json, os\n"
              "from tpu_compat.pod.config import TF_CONFIG_VAR\n"
              "a = os.environ['TF_CONFIG']\n"
              "b = os.environ.get(TF_CONFIG_VAR, '')\n"
              "c = os.getenv('TF_CONFIG')\n"
              "d = 'TF_CONFIG' in os.environ\n"
              "e = json.loads(b)\n"
              "f = pod_config.parse_tf_config(os.environ)\n"
              "g = pod_config.cluster_task_count(f)\n"
              "h = tf.distribute.cluster_resolver.TFConfigClusterResolver()\n"
              "os.environ.pop('TF_CONFIG', None)\n"
              "print(f'{TF_CONFIG_VAR} is not valid JSON')\n")
    assert _tf_config_reads(ast.parse(source)) == [3, 4, 5, 6, 7, 8, 9, 10]


def test_only_pod_config_reads_or_parses_tf_config():
    """RunConfig, the worker and the chief get TF_CONFIG's views from pod/config.py;
    pod/launch.py only removes it from its workers' environment."""
    readers = {}
    for folder, _, names in os.walk(PACKAGE):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as source:
                    lines = _tf_config_reads(ast.parse(source.read(), path))
                if lines:
                    readers[os.path.relpath(path, PACKAGE)] = lines
    assert set(readers) == {os.path.join("pod", "config.py")}, readers


def test_the_three_readers_of_one_tf_config():
    workers = ["m1:2222", "m2:2222"]
    chief = {"TF_CONFIG": json.dumps({"cluster": {"worker": workers},
                                      "task": {"type": "chief", "index": 0}})}
    worker = {"TF_CONFIG": json.dumps({"cluster": {"worker": workers},
                                       "task": {"type": "worker", "index": 1}})}
    assert pod_config.requested_pod(chief) == (2, tuple(workers))
    assert pod_config.requested_pod(chief).addresses == tuple(workers)
    assert pod_config.worker_task(chief) == (workers, "chief", None)
    assert pod_config.requested_pod(worker) is None
    assert pod_config.worker_task(worker) == (workers, "worker", 1)
    assert pod_config.worker_task({}) is None and pod_config.parse_tf_config({" ": ""}) is None
    assert pod_config.cluster_task_count(json.loads(worker["TF_CONFIG"])) == {"worker": 2}
    # The Estimator's view: a pod's chief is no cluster of Estimator tasks.
    assert pod_config.estimator_cluster(chief) == (json.loads(chief["TF_CONFIG"]), {}, True)
    assert pod_config.estimator_cluster(worker)[1:] == ({"worker": 2}, False)
    assert pod_config.estimator_cluster({**chief, "TPU_COMPAT_NUM_HOSTS": "3"})[1:] == (
        {"worker": 2}, False)
    assert pod_config.estimator_cluster({}) is None
    with pytest.raises(ValueError):
        pod_config.parse_tf_config({"TF_CONFIG": "{"})
    with pytest.raises(KeyError):
        pod_config.worker_task({"TF_CONFIG": json.dumps({"task": {"type": "worker"}})})
    assert pod_config.hosts_setting({"TPU_COMPAT_NUM_HOSTS": "4"}) == 4
    assert pod_config.hosts_setting({}) is None


_GETTER_PROBE = """
import os, sys
from tpu_compat.pod import launch, session
from tpu_compat.runtime import backend
try:
    backend.get_backend()
except backend.BackendUnavailableError as error:
    print("ERROR", error)
children = []
for task in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{task}/children") as handle:
        children += handle.read().split()
print("PROCESSES", len(children), len(launch.worker_pids()), session.current_pod())
"""


@pytest.mark.requires_tf
def test_get_backend_starts_no_process_and_says_what_starts_the_pod():
    # A process of its own (the pod would be this one's), forked by the suite's
    # fork server (issue 32's CI budget: a fresh one cost a TensorFlow import).
    result = _process.run_tensorflow_child(
        [sys.executable, "-c", _GETTER_PROBE], 300,
        env=subprocess_env(TPU_COMPAT_NUM_HOSTS="2", TPU_COMPAT_NUM_REPLICAS="4"),
        cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["PROCESSES"] == "0 0 None", result.stdout
    assert "TPU_COMPAT_NUM_HOSTS" in lines["ERROR"] and "tpu_compat.install()" in lines["ERROR"]
