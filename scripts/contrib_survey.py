"""Counts the tf.contrib / tf.tpu names public TPU programs use (docs/contrib_survey.md).

Reads git snapshots (bare or not) at given commits or branches, without a work
tree, and writes one JSON row per file that uses a surveyed name:
``{"repo", "rev", "path", "names": {name: occurrences}, "lines": {name: [line, ...]}}``.
Names are ``tf.contrib.X[.Y]``, ``tf.tpu.*``, ``tf.compat.v1.tpu.*``,
``tf.estimator.tpu.*``, ``tf.distribute.cluster_resolver.*``, resolved through
``from tensorflow.contrib import X as Z`` aliases; deep module imports
(``from tensorflow.contrib.tpu.python.tpu import tpu_config``) are recorded as
``deep:<path>`` names. Notebooks are read through their code cells only.

Usage: python scripts/contrib_survey.py SPEC.json OUT.json, where SPEC.json is
``[{"repo": "owner/name", "dir": "<git dir>", "revs": ["r1.15", "<sha>", ...]}]``;
a path is counted once per repository, at the first rev that has it. The
classification columns of tests/data/contrib_survey.json (equivalent, action,
reason) are the surveyor's judgement and are not produced by this script.
"""
import json, re, subprocess, sys, collections

ID = r"[A-Za-z_]\w*"
DIRECT = re.compile(r"\b(?:tf|tensorflow)\.contrib\.(" + ID + r")(?:\s*\.\s*(" + ID + r"))?(?:\.(" + ID + r"))?")
TPU = re.compile(r"\b(tf\.compat\.v1\.tpu|tf\.tpu|tf\.compat\.v1\.estimator\.tpu|tf\.estimator\.tpu|tf\.compat\.v1\.distribute\.cluster_resolver|tf\.distribute\.cluster_resolver)\.(" + ID + r")(?:\.(" + ID + r"))?")
FROM_CONTRIB = re.compile(r"^\s*from\s+tensorflow\.contrib((?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n#]+)", re.M)
IMPORT_CONTRIB = re.compile(r"^\s*import\s+tensorflow\.contrib((?:\.\w+)+)(?:\s+as\s+(\w+))?", re.M)
ASSIGN = re.compile(r"^\s*(\w+)\s*=\s*(?:tf|tensorflow)\.contrib\.(\w+)\s*$", re.M)
FROM_TPU = re.compile(r"^\s*from\s+tensorflow\.(?:compat\.v1\.)?(tpu|estimator\.tpu)\s+import\s+([^\n#]+)", re.M)

# deep module -> public contrib module whose namespace re-exported its names in TF 1.15
DEEP = [("tpu.", "tpu"), ("cluster_resolver.", "cluster_resolver"), ("data.", "data"),
        ("layers.", "layers"), ("training.", "training"), ("distribute.", "distribute"),
        ("framework.", "framework"), ("opt.", "opt"), ("metrics.", "metrics"),
        ("summary.", "summary"), ("estimator.", "estimator"), ("lookup.", "lookup"),
        ("keras.", "keras"), ("rnn.", "rnn"), ("learn.", "learn"), ("slim.", "slim"),
        ("seq2seq.", "seq2seq"), ("tensorboard.", "tensorboard"), ("quantize.", "quantize"),
        ("tpu", "tpu")]

def public_module(path):
    p = path.lstrip(".")
    if "." not in p:
        return p
    for pre, mod in DEEP:
        if p.startswith(pre):
            return mod
    return p.split(".")[0]

def code_of(path, text):
    if path.endswith(".ipynb"):
        try:
            nb = json.loads(text)
        except Exception:
            return text
        cells = nb.get("cells") or sum((ws.get("cells", []) for ws in nb.get("worksheets", [])), [])
        out = []
        for c in cells:
            if c.get("cell_type") == "code":
                src = c.get("source") or c.get("input") or ""
                out.append("".join(src) if isinstance(src, list) else src)
        return "\n".join(out)
    return text

def names_in(text):
    names = collections.Counter()
    lines_for = collections.defaultdict(list)
    def add(name, pos):
        names[name] += 1
        if len(lines_for[name]) < 3:
            lines_for[name].append(text.count("\n", 0, pos) + 1)
    body = re.sub(r"^\s*(?:from|import)\s+tensorflow\S*.*$", "", text, flags=re.M)
    for m in DIRECT.finditer(body):
        mod, attr = m.group(1), m.group(2)
        add(f"tf.contrib.{mod}", m.start())
        if attr:
            add(f"tf.contrib.{mod}.{attr}", m.start())
    for m in TPU.finditer(body):
        base, attr, sub = m.groups()
        if attr == "experimental" and sub:
            add(f"{base}.experimental.{sub}", m.start())
        else:
            add(f"{base}.{attr}", m.start())
    aliases = {}
    for m in FROM_CONTRIB.finditer(text):
        path, items = m.group(1), m.group(2).strip("() \n")
        for item in re.split(r"\s*,\s*", items.replace("\n", " ")):
            item = item.strip().rstrip("\\").strip()
            if not item:
                continue
            parts = item.split()
            nm, al = parts[0], (parts[2] if len(parts) >= 3 and parts[1] == "as" else parts[0])
            if not re.fullmatch(ID, nm):
                continue
            if not path:  # from tensorflow.contrib import tpu
                add(f"tf.contrib.{nm}", m.start())
                add(f"import:from tensorflow.contrib import {nm}", m.start())
                aliases[al] = f"tf.contrib.{nm}"
            else:
                pub = public_module(path)
                add(f"tf.contrib.{pub}", m.start())
                add(f"import:from tensorflow.contrib{path} import", m.start())
                if "." in path.lstrip("."):
                    # a deep path (tensorflow.contrib.tpu.python.tpu ...)
                    if re.fullmatch(r"[a-z0-9_]+", nm):   # a module
                        deep = f"tensorflow.contrib{path}.{nm}"
                        add("deep:" + deep, m.start())
                        aliases[al] = "deep:" + deep
                    else:
                        add(f"deep:tensorflow.contrib{path}.{nm}", m.start())
                        add(f"tf.contrib.{pub}.{nm}", m.start())
                else:
                    add(f"tf.contrib.{pub}.{nm}", m.start())
                    aliases[al] = f"tf.contrib.{pub}.{nm}" if nm in MODULE_LIKE else None
    for m in IMPORT_CONTRIB.finditer(text):
        path, al = m.group(1), m.group(2)
        pub = public_module(path)
        add(f"tf.contrib.{pub}", m.start())
        add(f"import:import tensorflow.contrib{path}", m.start())
        if al:
            aliases[al] = f"tf.contrib.{pub}"
    for m in ASSIGN.finditer(text):
        aliases[m.group(1)] = f"tf.contrib.{m.group(2)}"
    for m in FROM_TPU.finditer(text):
        for item in m.group(2).split(","):
            nm = item.strip().split()[0] if item.strip() else ""
            if re.fullmatch(ID, nm):
                add(f"tf.{m.group(1)}.{nm}", m.start())
    for al, target in aliases.items():
        if not target or al in ("tf", "tensorflow"):
            continue
        depth = target.count(".")
        for m in re.finditer(r"(?<![\w.])" + re.escape(al) + r"\.(" + ID + r")", body):
            if target.startswith("deep:"):
                pub = public_module(target[len("deep:tensorflow.contrib"):])
                if pub == "tpu" and m.group(1) in TPU_PUBLIC or pub != "tpu" and m.group(1)[0].isupper():
                    add(f"tf.contrib.{pub}.{m.group(1)}", m.start())
                add(f"{target}.{m.group(1)}", m.start())
            elif depth == 2:   # tf.contrib.X
                add(f"{target}.{m.group(1)}", m.start())
            # depth 3 (a module like framework.nest): count the module itself
            else:
                add(target, m.start())
    return names, lines_for

MODULE_LIKE = {"nest", "slim", "tpu_estimator", "tpu_config", "tpu_optimizer", "tpu_function",
               "tpu_feed", "training_loop", "keras_support", "tpu_ops", "bfloat16", "device_assignment",
               "python", "ops", "layers", "models", "optimizers", "backend", "losses", "initializers",
               "callbacks", "regularizers", "activations", "utils", "preprocessing", "datasets",
               "metrics", "applications", "constraints", "tpu", "lookup_ops", "tpu_context"}

TPU_PUBLIC = set("""cross_replica_sum infeed_dequeue infeed_dequeue_tuple infeed_enqueue
infeed_enqueue_tuple outfeed_dequeue outfeed_dequeue_tuple outfeed_enqueue outfeed_enqueue_tuple
initialize_system shutdown_system device_assignment core replicate shard batch_parallel rewrite
outside_compilation CrossShardOptimizer InfeedQueue DeviceAssignment Topology while_loop repeat
TPUEstimator TPUEstimatorSpec export_estimator_savedmodel RunConfig InputPipelineConfig TPUConfig
bfloat16_scope TPUDistributionStrategy keras_to_tpu_model AsyncCheckpointSaverHook
TPUInMemoryEvalHook""".split())

def scan(repo_dir, revs, label, out):
    seen = {}
    for rev in revs:
        try:
            files = subprocess.run(["git", "-C", repo_dir, "grep", "-l", "-I", "-E",
                                    r"contrib|tf\.tpu|compat\.v1\.tpu|estimator\.tpu|tensorflow\.tpu",
                                    rev, "--", "*.py", "*.ipynb"],
                                   capture_output=True, text=True, timeout=300).stdout.split("\n")
        except subprocess.TimeoutExpired:
            print("timeout", label, rev, file=sys.stderr); continue
        for f in files:
            if not f:
                continue
            path = f.split(":", 1)[1]
            if "tensorflow/contrib/" in path or "site-packages" in path or "/third_party/" in path:
                continue
            if path in seen:
                continue
            text = subprocess.run(["git", "-C", repo_dir, "show", f"{rev}:{path}"],
                                  capture_output=True, text=True, errors="replace").stdout
            code = code_of(path, text)
            names, lines = names_in(code)
            if names:
                seen[path] = rev
                out.append({"repo": label, "rev": rev, "path": path, "names": dict(names),
                            "lines": {k: v for k, v in lines.items()}})

if __name__ == "__main__":
    spec = json.load(open(sys.argv[1]))
    out = []
    for entry in spec:
        scan(entry["dir"], entry["revs"], entry["repo"], out)
        print(entry["repo"], sum(1 for o in out if o["repo"] == entry["repo"]), file=sys.stderr)
    json.dump(out, open(sys.argv[2], "w"), indent=0)
