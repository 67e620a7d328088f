"""Injected faults on small files: torn, corrupted, concurrent and interrupted model files and caches.

Every test runs in its own ``$CONNLAP_CACHE`` (never the real cache) on files made here: a tiny
model folder converted like a GGUF model, fake chunk packages, small JSON reports.
"""
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from connlap_lite import _files
from connlap_lite.models import load as models, offline

sys.path.insert(0, str(Path(__file__).parents[1]))
import tiny_models
from conftest import fake_chunked


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return tiny_models.make_folder(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("CONNLAP_CACHE", str(folder))
    return folder


@pytest.fixture
def fake(tiny_folder, cache, monkeypatch):
    """``fake-tiny``: an offline short name converted from the tiny folder into the temporary cache."""
    monkeypatch.setitem(offline.OFFLINE, "fake-tiny", "fake-tiny==0")
    calls = []

    def source(name):
        calls.append(name)
        return str(tiny_folder), {}
    monkeypatch.setattr(models, "offline_source", source)
    return models._converted_dir("fake-tiny"), calls


def weights_sum(model):
    return float(sum(p.detach().double().sum() for p in model.parameters()))


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


# ------------------------------------------------------------------ converted copies
def test_conversion_writes_a_marker_with_every_files_hash(fake):
    target, calls = fake
    model, tok = models.load_model("fake-tiny")
    marker = json.loads((target / models.MARKER).read_text())
    assert set(marker["files"]) >= {"model.safetensors", "config.json", "tokenizer_config.json"}
    assert marker["transformers"] == importlib.metadata.version("transformers")
    for name, digest in marker["files"].items():
        assert hashlib.sha256((target / name).read_bytes()).hexdigest() == digest
    models.load_model("fake-tiny")
    assert calls == ["fake-tiny"]                      # the second load reads the copy: no conversion
    assert not [p for p in target.parent.iterdir() if ".tmp-" in p.name]


def test_flipped_byte_in_converted_weights_is_rebuilt(fake):
    target, calls = fake
    want = weights_sum(models.load_model("fake-tiny")[0])
    st = target / "model.safetensors"
    flip_byte(st, st.stat().st_size - 7)                 # a weight's byte, the header intact: loads silently today
    _files._HASHED.clear()
    got = weights_sum(models.load_model("fake-tiny")[0])
    assert got == want and len(calls) == 2


@pytest.mark.parametrize("damage", ["truncated config", "missing tokenizer", "empty weights", "no marker",
                                    "legacy marker", "garbage marker", "converted by an older transformers",
                                    "converter not named"])
def test_damaged_copy_is_rebuilt(fake, damage):
    target, calls = fake
    want = weights_sum(models.load_model("fake-tiny")[0])
    if damage == "truncated config":
        (target / "config.json").write_text((target / "config.json").read_text()[:40])
    elif damage == "missing tokenizer":
        (target / "tokenizer_config.json").unlink()
    elif damage == "empty weights":
        (target / "model.safetensors").write_bytes(b"")
    elif damage == "no marker":
        (target / models.MARKER).unlink()
    elif damage == "legacy marker":
        (target / models.MARKER).write_text("/somewhere/model.gguf")
    elif damage.startswith("convert"):              # its tokenizer may be read otherwise (Gemma-3's GGUF: no BOS)
        marker = json.loads((target / models.MARKER).read_text())
        if damage == "converter not named":
            del marker["transformers"]
        else:
            marker["transformers"] = "5.15.1"
        (target / models.MARKER).write_text(json.dumps(marker))
    else:
        (target / models.MARKER).write_text("{not json")
    assert weights_sum(models.load_model("fake-tiny")[0]) == want
    assert len(calls) == 2


def test_copy_marked_complete_that_fails_to_load_is_rebuilt_once(fake):
    target, calls = fake
    models.load_model("fake-tiny")
    (target / "config.json").write_text('{"model_type": "no-such-architecture"}')
    marker = json.loads((target / models.MARKER).read_text())     # the marker agrees: only loading tells
    marker["files"]["config.json"] = hashlib.sha256((target / "config.json").read_bytes()).hexdigest()
    (target / models.MARKER).write_text(json.dumps(marker))
    _files._HASHED.clear()
    model, _ = models.load_model("fake-tiny")
    assert len(calls) == 2 and model.config.model_type == "llama"


def test_a_source_that_cannot_be_converted_gives_a_clear_error(fake, tmp_path, monkeypatch):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    monkeypatch.setattr(models, "offline_source", lambda name: (str(broken), {}))
    with pytest.raises(Exception, match="no-such-architecture"):
        models.load_model("fake-tiny")
    target, _ = fake
    assert not target.exists() and not [p for p in target.parent.iterdir() if ".tmp-" in p.name]


def test_rebuild_that_still_fails_names_the_copy(fake, monkeypatch):
    target, calls = fake
    models.load_model("fake-tiny")
    monkeypatch.setattr(models, "_load", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(OSError, match=rf"model 'fake-tiny': the converted copy in {target} cannot be loaded even "
                                      r"after a rebuild \(boom"):
        models.load_model("fake-tiny")
    assert len(calls) == 2


def test_interrupted_conversion_leaves_nothing_and_the_next_load_works(fake, monkeypatch):
    target, calls = fake
    import safetensors.torch

    real = safetensors.torch.save_model

    def interrupted(*args, **kw):
        real(*args, **kw)
        raise KeyboardInterrupt
    monkeypatch.setattr(safetensors.torch, "save_model", interrupted)
    with pytest.raises(KeyboardInterrupt):
        models.load_model("fake-tiny")
    assert not target.exists() and not [p for p in target.parent.iterdir() if ".tmp-" in p.name]
    monkeypatch.setattr(safetensors.torch, "save_model", real)
    assert models.load_model("fake-tiny")[0].config.num_hidden_layers == 2


def test_leftovers_of_killed_runs_are_swept(fake):
    target, _ = fake
    target.parent.mkdir(parents=True)
    stale = [target.with_name(target.name + ".tmp-999999-deadbeef"), target.with_name(target.name + ".tmp-1")]
    stale[0].mkdir()
    (stale[0] / "model.safetensors").write_bytes(b"\0" * 1000)
    stale[1].write_bytes(b"x")
    other = target.with_name("someone-else.tmp-1")
    other.write_bytes(b"y")
    models.load_model("fake-tiny")
    assert not any(p.exists() for p in stale) and other.exists()


def test_four_processes_convert_into_an_empty_cache_at_once(tiny_folder, cache):
    env = {**os.environ, "CONNLAP_CACHE": str(cache), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen(tiny_models.worker_command(tiny_folder), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0, err[-2000:]
    sums = {tiny_models.parse(out)["sum"] for out, _, _ in results}
    assert len(sums) == 1
    converted = cache / "converted"
    assert [p.name for p in converted.iterdir() if not p.name.endswith(".lock")] == ["fake-tiny-fake-tiny__0"]
    assert models._intact(converted / "fake-tiny-fake-tiny__0")


# ------------------------------------------------------------------ GGUF sources
@pytest.fixture
def packaged(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "fakegguf"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    blob = bytes(range(256)) * 40
    (pkg / "model.gguf").write_bytes(blob)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = offline.Packaged("fakegguf", "model.gguf", len(blob), hashlib.sha256(blob).hexdigest())
    monkeypatch.setitem(offline.OFFLINE, "fake-gguf", "fakegguf==0")
    return spec, pkg / "model.gguf"


def test_packaged_gguf_is_checked_before_conversion(packaged):
    spec, path = packaged
    assert offline.packaged(spec, "fake-gguf") == path
    flip_byte(path, 5000)                                 # one flipped byte: refused, never converted
    with pytest.raises(OSError, match=r"model 'fake-gguf': .*model.gguf has size 10240 and sha256 .* the file is "
                                      r"damaged; reinstall 'fakegguf==0'"):
        offline.packaged(spec, "fake-gguf")
    path.write_bytes(path.read_bytes()[:100])             # torn
    with pytest.raises(OSError, match="has size 100"):
        offline.packaged(spec, "fake-gguf")
    path.unlink()
    with pytest.raises(FileNotFoundError, match="is missing; reinstall"):
        offline.packaged(spec, "fake-gguf")


def test_every_offline_model_file_has_a_pinned_hash():
    for name in offline.OFFLINE:
        spec = offline.PACKAGED.get(name) or offline.CHUNKED.get(name)
        assert spec is not None and len(spec.sha256) == 64 and spec.size > 0, name


@pytest.mark.parametrize("name", list(offline.PACKAGED))
def test_real_packaged_files_match_their_pins(name):
    spec = offline.PACKAGED[name]
    assert offline.packaged(spec, name).stat().st_size == spec.size


@pytest.fixture
def chunks(tmp_path, monkeypatch):
    data = [b"GGUF" + bytes(range(200)), bytes(range(100, 250)) * 3, b"tail" * 10]
    return fake_chunked(tmp_path, monkeypatch, "fakechunk", "data/piece{j:02d}.bin", data)


def test_stale_parts_are_swept_and_a_corrupt_copy_rebuilt(chunks):
    spec, whole, folder = chunks
    folder.mkdir()
    (folder / "fake.gguf.part-999999-dead").write_bytes(b"half")
    (folder / "fake.gguf").write_bytes(whole[:-1] + b"!")
    assert offline.assemble(spec, "fake", folder=folder).read_bytes() == whole
    assert sorted(p.name for p in folder.iterdir()) == ["fake.gguf", "fake.gguf.lock"]


def test_concurrent_assembly(chunks, tmp_path):
    spec, whole, folder = chunks
    code = ("import sys; sys.path.insert(0, {site!r}); from connlap_lite.models import offline; "
            "offline.OFFLINE['fake'] = 'x'; "
            "spec = offline.Chunked('fakechunk{{k}}', 'data/piece{{j:02d}}.bin', 3, {size}, {sha!r}, 'fake.gguf'); "
            "print(offline.assemble(spec, 'fake', folder={folder!r}))").format(
        site=str(tmp_path / "site"), size=spec.size, sha=spec.sha256, folder=str(folder))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
    assert (folder / "fake.gguf").read_bytes() == whole
    assert not [p for p in folder.iterdir() if ".part-" in p.name]


def test_gemma_is_assembled_by_the_project_into_the_cache(cache):
    path = offline.assemble(offline.CHUNKED["gemma3-270m"], "gemma3-270m")
    assert path.parent == cache and path.stat().st_size == offline.CHUNKED["gemma3-270m"].size
    with open(path, "r+b") as f:                           # a torn copy: rebuilt, not an error to act on
        f.truncate(1000)
    _files._HASHED.clear()
    again = offline.assemble(offline.CHUNKED["gemma3-270m"], "gemma3-270m")
    assert again.stat().st_size == offline.CHUNKED["gemma3-270m"].size
    assert models.offline_source("gemma3-270m") == (str(cache), {"gguf_file": "gemma-3-270m-q4_k_m.gguf"})


# ------------------------------------------------------------------ the measurement cache
@pytest.fixture(scope="module")
def tiny_report_args():
    return dict(n_passages=2, n_tokens=12, random_seeds=(0,), shuffle=False, texts=["a walk on tokens. " * 40])


def _analyze(folder, **kw):
    from connlap_lite.measure.analysis import analyze
    return analyze(str(folder), **kw)


@pytest.mark.parametrize("damage", ["truncated", "empty", "not a dict", "wrong shape", "other schema"])
def test_damaged_measurement_is_recomputed_with_a_warning(tiny_folder, cache, tiny_report_args, damage):
    first = _analyze(tiny_folder, **tiny_report_args)
    [path] = list((cache / "measurements").glob("*.json"))
    text = path.read_text()
    bad = {"truncated": text[: len(text) // 2], "empty": "", "not a dict": "[1, 2]",
           "wrong shape": json.dumps({**first, "conditions": {"trained": {"tv": [[0.1]]}}}),
           "other schema": json.dumps({**first, "schema": "old"})}[damage]
    path.write_text(bad)
    with pytest.warns(UserWarning, match="recomputing it"):
        again = _analyze(tiny_folder, **tiny_report_args)
    assert again["conditions"]["trained"]["sink"] == first["conditions"]["trained"]["sink"]
    assert json.loads(path.read_text())["conditions"] == again["conditions"]     # overwritten with a good one
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _analyze(tiny_folder, **tiny_report_args)                                 # now read quietly


def test_refresh_overwrites_and_no_temporaries_remain(tiny_folder, cache, tiny_report_args):
    _analyze(tiny_folder, **tiny_report_args)
    [path] = list((cache / "measurements").glob("*.json"))
    path.write_text("{")
    report = _analyze(tiny_folder, refresh=True, **tiny_report_args)
    assert json.loads(path.read_text())["seconds"] == report["seconds"]
    assert [p.name for p in (cache / "measurements").iterdir()] == [path.name]


def test_cache_key_follows_a_local_folders_weights(tmp_path, cache, tiny_report_args):
    folder = tiny_models.make_folder(tmp_path / "m", seed=1)
    first = _analyze(folder, **tiny_report_args)
    tiny_models.make_folder(folder, seed=2)                  # new weights in the same folder
    second = _analyze(folder, **tiny_report_args)
    assert len(list((cache / "measurements").glob("*.json"))) == 2
    assert second["conditions"]["trained"]["head_defect"] != first["conditions"]["trained"]["head_defect"]


def test_cache_key_follows_the_corpus_text(tiny_folder, cache, monkeypatch):
    """The key carries the corpus's digest: a report measured on one text is never read back for another (the
    corpora once came with the running Python, and a chapter's by-hand check then failed under another)."""
    from connlap_lite.models import text
    reports = []
    for words in ("a walk on tokens. ", "another text of other words. "):
        texts = [words * 40]
        monkeypatch.setattr(text, "works", lambda name="pydoc", t=texts: (("text", t[0]),))
        monkeypatch.setattr(text, "corpus_digest", lambda name="pydoc", t=texts: text._digest([("text", t[0])]))
        reports.append(_analyze(tiny_folder, n_passages=2, n_tokens=12, random_seeds=(0,), shuffle=False))
        assert reports[-1]["corpus_digest"] == text._digest([("text", texts[0])])
    assert len(list((cache / "measurements").glob("*.json"))) == 2
    assert reports[0]["corpus_digest"] != reports[1]["corpus_digest"]
    assert reports[0]["conditions"]["trained"]["uniform_dist"] != reports[1]["conditions"]["trained"]["uniform_dist"]


_MEASURE_ONCE = """
import json, os, sys, time
from connlap_lite.measure import cache as _cache
def compute():
    with open(sys.argv[1], "a") as f:            # every measurement leaves a line
        f.write("measured\\n")
    time.sleep(1.5)
    return {"value": 7}
print(json.dumps(_cache.cached("measurements", "m", "s", {"n": 1}, lambda r: None, compute)))
"""


def test_two_processes_that_ask_for_one_report_measure_it_once(cache, tmp_path):
    """make test's and make book's lanes share the cache: the second asker waits for the first one's report."""
    log = tmp_path / "measured.txt"
    env = {**os.environ, "CONNLAP_CACHE": str(cache)}
    procs = [subprocess.Popen([sys.executable, "-c", _MEASURE_ONCE, str(log)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert all(rc == 0 for _, _, rc in results), [err[-1000:] for _, err, _ in results]
    assert [json.loads(out) for out, _, _ in results] == [{"value": 7}] * 2
    assert log.read_text().splitlines() == ["measured"]


def test_offline_names_keep_their_cache_key():
    from connlap_lite.measure.cache import folder_identity, key, path
    from connlap_lite.measure.analysis import SCHEMA
    assert folder_identity("smollm2-135m") is None
    args = dict(n_passages=16, n_tokens=128, seed=0, random_seeds=[0, 1], shuffle=True, random_init=False,
                q4=False, texts=None, corpus="pydoc")
    blob = json.dumps({"name": "smollm2-135m", "schema": SCHEMA, **args}, sort_keys=True).encode()
    digest = hashlib.sha256(blob).hexdigest()[:16]
    assert key("smollm2-135m", SCHEMA, **args) == digest          # the key of the caches made before the pipeline
    assert path("measurements", "smollm2-135m", digest).name == f"smollm2-135m-{digest}.json"
    assert path("known", "qwen2.5-coder-0.5b", digest).name == f"qwen2.5-coder-0.5b-{digest}.json"


def test_atomic_write_leaves_old_or_new(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    _files.atomic_write_text(path, "old")

    def fail(*a):
        raise OSError("disk full")
    monkeypatch.setattr(_files.os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        _files.atomic_write_text(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_tiny_model_weights_are_what_was_saved(fake, tiny_folder):
    from safetensors.torch import load_file
    model, _ = models.load_model("fake-tiny")
    saved = load_file(str(tiny_folder / "model.safetensors"))
    own = model.state_dict()
    assert all(torch.equal(own[k], v) for k, v in saved.items() if k in own)


def test_legacy_and_foreign_temporaries(tmp_path):
    target = tmp_path / "model.gguf"
    legacy = tmp_path / "model.part-123"                  # what earlier versions left (suffix replaced)
    mine = tmp_path / "model.gguf.part-9-abc"
    keep = tmp_path / "modelx.part-1"
    for p in (legacy, mine, keep):
        p.write_bytes(b"x")
    with _files.locked(target):
        gone = _files.sweep(target)
    assert sorted(gone) == sorted([legacy, mine]) and keep.exists()
    folder = tmp_path / "measurements"
    folder.mkdir()
    (folder / "a-1.json.tmp-5-x").write_text("{")
    (folder / "b-2.tmp-7").write_text("{")
    (folder / "c-3.json").write_text("{}")
    _files.sweep(folder / "c-3.json", everything=True)
    assert [p.name for p in folder.iterdir()] == ["c-3.json"]


def test_a_loader_waits_for_the_lock_and_uses_the_copy_finished_meanwhile(tiny_folder, cache, monkeypatch):
    """Deterministic: the test holds the lock and finishes the copy; a loader started meanwhile must wait
    for the lock and then use that copy, not convert (or remove) one of its own."""
    import time
    monkeypatch.setitem(offline.OFFLINE, "fake-tiny", "fake-tiny==0")
    target = models._converted_dir("fake-tiny")
    ready = cache.parent / "ready"
    env = {**os.environ, "CONNLAP_CACHE": str(cache), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    with _files.locked(target):
        proc = subprocess.Popen(tiny_models.worker_command(tiny_folder, ready), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)                                   # the loader is now blocked on the lock
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        models._converted("fake-tiny", str(tiny_folder), {})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert tiny_models.parse(out)["converted"] == 0
    assert models._intact(target)


def test_interrupted_assembly_leaves_nothing(chunks, monkeypatch):
    spec, whole, folder = chunks
    real_replace = os.replace

    def interrupted(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(models.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        offline.assemble(spec, "fake", folder=folder)
    assert sorted(p.name for p in folder.iterdir()) == ["fake.gguf.lock"]
    monkeypatch.setattr(models.os, "replace", real_replace)
    assert offline.assemble(spec, "fake", folder=folder).read_bytes() == whole


WRITER = r"""
import json, sys
from pathlib import Path
from connlap_lite import _files
path = Path(sys.argv[1])
for k in range(40):
    with _files.locked(path.parent):
        _files.atomic_write_text(path, json.dumps({"writer": sys.argv[2], "k": k, "pad": "x" * 200_000}))
"""


def test_concurrent_report_writers_never_show_a_partial_file(tmp_path):
    path = tmp_path / "measurements" / "r.json"
    path.parent.mkdir()
    _files.atomic_write_text(path, json.dumps({"writer": "start"}))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(i)], stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    reads = 0
    while any(p.poll() is None for p in procs):
        json.loads(path.read_text())                   # always a whole report, old or new
        reads += 1
    for p in procs:
        assert p.returncode == 0, p.stderr.read()[-2000:]
    assert reads > 0 and json.loads(path.read_text())["k"] == 39
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json"]


# ------------------------------------------------------------------ the report survives its cache
CHILD = r"""
import json, sys, warnings
from connlap_lite.measure.analysis import analyze
from connlap_lite.known import known_results
kw = json.loads(sys.argv[2])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    report = analyze(sys.argv[1], **kw)
    known = known_results(sys.argv[1], n_passages=2, n_tokens=12, texts=kw["texts"])
print(json.dumps({"warnings": [str(w.message) for w in caught], "sink": report["conditions"]["trained"]["sink"],
                  "known": sorted(known["conditions"])}))
"""


def _namespaces() -> str | None:
    """Why a private mount namespace cannot be had here (None if it can): the full and read-only disks need one."""
    import shutil
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"no private mount namespace here ({probe.stderr.strip()[:80]})"


def _in_namespace(setup: str, argv: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    """Run ``argv`` in a private mount namespace after the shell commands ``setup`` (mounts seen by it alone)."""
    import shlex
    script = f"set -e; {setup}; exec {' '.join(map(shlex.quote, argv))}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, **kw)


def _under_fsize_limit(limit: int, code: str, *args: str) -> list[str]:
    """The command running ``python -c code args`` with files above ``limit`` bytes unwritable (RLIMIT_FSIZE,
    ``ulimit -f``; SIGXFSZ ignored, so that a write past the limit fails with errno 27, File too large, instead of
    killing the child). The limit is set once transformers' model code is imported: torch 2.6 writes a generated
    module of its own (over 2 KB) into the temporary folder when transformers first imports torch.distributed,
    which is not the writing these tests put under the limit."""
    prefix = ("import resource, signal, transformers.modeling_utils\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n")
    return [sys.executable, "-c", prefix + code, *args]


def _child_env(cache: Path) -> dict:
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "CONNLAP_CACHE": str(cache), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def expected(tiny_folder, tiny_report_args):
    """The report on the tiny folder, measured without the cache (which it neither reads nor writes)."""
    return _analyze(tiny_folder, cache=False, **tiny_report_args)


def _check_survived(result: dict, expected: dict, path_part: str, reason: str) -> None:
    """The report came back whole, and one warning per report named the path, the reason and CONNLAP_CACHE."""
    assert result["sink"] == expected["conditions"]["trained"]["sink"]
    assert result["known"] == ["random0", "trained"]
    failed = [w for w in result["warnings"] if "was not cached" in w]
    assert len(failed) == 2, result["warnings"]                      # the measurement and the known results
    for w in failed:
        assert path_part in w and "CONNLAP_CACHE" in w and reason in w, w


FAULTS = {   # name: (shell setup in a private mount namespace, the cache inside it, errno's words)
    "read-only folder": ("mount -t tmpfs -o size=1m tmpfs {mnt}; mkdir -p {mnt}/cache/measurements {mnt}/cache/known;"
                         " mount -o remount,ro {mnt}", "{mnt}/cache", "Read-only file system"),
    "full disk": ("mount -t tmpfs -o size=64k tmpfs {mnt}; mkdir -p {mnt}/cache/measurements {mnt}/cache/known; "
                  "cat /dev/zero > {mnt}/fill 2>/dev/null || true", "{mnt}/cache", "No space left on device"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_cache_on_a_full_or_read_only_disk_leaves_the_report(fault, tiny_folder, tiny_report_args, expected,
                                                                  tmp_path):
    why = _namespaces()
    if why:
        pytest.skip(f"{fault}: {why}")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    setup, cache, reason = (x.format(mnt=mnt) for x in FAULTS[fault])
    proc = _in_namespace(setup, [sys.executable, "-c", CHILD, str(tiny_folder), json.dumps(tiny_report_args)],
                         _child_env(Path(cache)), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_survived(tiny_models.parse(proc.stdout), expected, cache, reason)


def test_a_cache_over_the_file_size_limit_leaves_the_report(tiny_folder, tiny_report_args, expected, tmp_path):
    cache = tmp_path / "cache"
    proc = subprocess.run(_under_fsize_limit(2048, CHILD, str(tiny_folder), json.dumps(tiny_report_args)),
                          env=_child_env(cache), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_survived(tiny_models.parse(proc.stdout), expected, str(cache), "File too large")
    left = [p.name for p in cache.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    assert left == [], left                                   # no torn report, no temporary


@pytest.mark.parametrize("fault", ["cache is a file", "measurements is a file", "report path is a folder"])
def test_a_cache_in_the_way_leaves_the_report(fault, tiny_folder, tiny_report_args, expected, tmp_path, monkeypatch):
    from connlap_lite.known import known_results
    cache = tmp_path / "cache"
    monkeypatch.setenv("CONNLAP_CACHE", str(cache))
    if fault == "cache is a file":
        cache.write_text("not a folder")
    elif fault == "measurements is a file":
        cache.mkdir()
        (cache / "measurements").write_text("not a folder")
        (cache / "known").write_text("not a folder")
    else:
        _analyze(tiny_folder, **tiny_report_args)
        known_results(str(tiny_folder), n_passages=2, n_tokens=12, texts=tiny_report_args["texts"])
        for path in cache.glob("*/*.json"):
            path.unlink()
            path.mkdir()                                       # a folder where the report file should be
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = _analyze(tiny_folder, **tiny_report_args)
        known = known_results(str(tiny_folder), n_passages=2, n_tokens=12, texts=tiny_report_args["texts"])
    _check_survived({"warnings": [str(w.message) for w in caught], "sink": report["conditions"]["trained"]["sink"],
                     "known": sorted(known["conditions"])}, expected, str(cache), "")


# ------------------------------------------------------------------ the command line keeps the report
@pytest.fixture(scope="module")
def texts_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("texts") / "texts.txt"
    path.write_text("a walk on tokens. " * 40)
    return path


def _cli_args(folder, texts, out) -> list[str]:
    return ["analyze", str(folder), "--texts", str(texts), "--passages", "2", "--tokens", "12", "--json", str(out)]


def test_the_cli_writes_its_report_when_the_cache_cannot_be_written(tiny_folder, texts_file, tmp_path, monkeypatch,
                                                                    capsys):
    from connlap_lite.__main__ import main
    cache = tmp_path / "cache-file"
    cache.write_text("a file where the cache folder should be")
    monkeypatch.setenv("CONNLAP_CACHE", str(cache))
    out = tmp_path / "report.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(_cli_args(tiny_folder, texts_file, out)) == 0
    failed = [str(w.message) for w in caught if "was not cached" in str(w.message)]
    assert len(failed) == 2 and all(str(cache) in w and "set CONNLAP_CACHE" in w for w in failed), failed
    report = json.loads(out.read_text())
    assert report["model"] == str(tiny_folder) and {"trained", "random0", "shuffled"} <= set(report["conditions"])
    assert sorted(report["known_results"]["conditions"]) == ["random0", "trained"]


def test_the_cli_names_the_json_file_it_cannot_write(tiny_folder, texts_file, tmp_path):
    """Under ``ulimit -f`` neither the cache nor ``--json`` can be written: the cache warns, and the one error line
    names the ``--json`` file (exit status 1), leaving no partial file behind."""
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    cli = "import runpy; runpy.run_module('connlap_lite', run_name='__main__', alter_sys=True)"   # python -m connlap_lite
    proc = subprocess.run(_under_fsize_limit(2048, cli, *_cli_args(tiny_folder, texts_file, out)),
                          env=_child_env(tmp_path / "cache"), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: --json {out}: the report could not be written (File too large)"), last
    assert "was not cached" in proc.stderr
    assert list(out.parent.iterdir()) == []


def test_the_cli_names_the_json_file_on_a_full_disk(tiny_folder, texts_file, tmp_path):
    why = _namespaces()
    if why:
        pytest.skip(f"full disk: {why}")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    out = mnt / "report.json"
    proc = _in_namespace(f"mount -t tmpfs -o size=64k tmpfs {mnt}; cat /dev/zero > {mnt}/fill 2>/dev/null || true",
                         [sys.executable, "-m", "connlap_lite", *_cli_args(tiny_folder, texts_file, out)],
                         _child_env(tmp_path / "cache"), timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: --json {out}: the report could not be written (No space left on device)"), last


def test_the_cli_never_writes_into_the_model_or_over_a_file_that_is_not_a_report(tiny_folder, texts_file, tmp_path,
                                                                                cache, capsys):
    from connlap_lite.__main__ import main
    before = {p.name: p.read_bytes() for p in tiny_folder.iterdir()}
    for target in (tiny_folder / "config.json", tiny_folder / "report.json"):
        assert main(_cli_args(tiny_folder, texts_file, target)) == 2
        assert "inside the model's folder" in capsys.readouterr().err
    notes = tmp_path / "notes.json"
    notes.write_text('{"my": "notes"}')
    assert main(_cli_args(tiny_folder, texts_file, notes)) == 2
    assert "is not a report written by analyze --json: it is not overwritten" in capsys.readouterr().err
    assert notes.read_text() == '{"my": "notes"}'
    assert {p.name: p.read_bytes() for p in tiny_folder.iterdir()} == before
    out = tmp_path / "report.json"                             # an earlier report may be replaced
    assert main(_cli_args(tiny_folder, texts_file, out)) == 0
    first = json.loads(out.read_text())
    assert main(_cli_args(tiny_folder, texts_file, out)) == 0
    assert json.loads(out.read_text())["conditions"] == first["conditions"]
    models.load_model(str(tiny_folder))                        # the model still loads


@pytest.mark.parametrize("fault", ["cache is a file", "over the file-size limit"])
def test_an_offline_model_loads_from_its_source_when_the_cache_cannot_be_written(fault, fake, tiny_folder, cache):
    target, calls = fake
    if fault == "cache is a file":
        cache.write_text("a file where the cache folder should be")
        with pytest.warns(UserWarning, match="converted copy cannot be written into .* set CONNLAP_CACHE"):
            model, _ = models.load_model("fake-tiny")
        assert weights_sum(model) == weights_sum(models.load_model(str(tiny_folder))[0])
        return
    code = ("import sys, warnings; sys.path.insert(0, {tests!r}); import tiny_models; from pathlib import Path; "
            "from connlap_lite.models import load as models; tiny_models.register(models, Path({folder!r})); "
            "warnings.simplefilter('always'); models.load_model('fake-tiny'); print('loaded')").format(
        tests=str(Path(__file__).parents[1]), folder=str(tiny_folder))
    proc = subprocess.run(_under_fsize_limit(4096, code), env=_child_env(cache), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and "loaded" in proc.stdout, proc.stderr[-3000:]
    assert "File too large" in proc.stderr and "set CONNLAP_CACHE" in proc.stderr
    assert not [p for p in cache.rglob("*") if ".tmp-" in p.name]             # the half-written copy is gone


# ------------------------------------------------------------------ folders that lie: code, weights of another model
@pytest.mark.parametrize("file", ["tokenizer_config.json", "config.json"])
def test_a_folder_with_code_is_refused_before_anything_asks(file, tmp_path):
    """A folder whose configuration asks to run its own code (``auto_map``): refused by name, in a child whose
    standard input answers "y" to any prompt; its code never runs (it would write RAN-CODE) and nothing is cached."""
    folder = tiny_models.with_code(tiny_models.make_folder(tmp_path / "model"), file)
    before = sorted(p.name for p in folder.iterdir())
    cache = tmp_path / "cache"
    proc = subprocess.run([sys.executable, "-m", "connlap_lite", "analyze", str(folder), "--passages", "2",
                           "--tokens", "8"], input="y\ny\ny\n", env=_child_env(cache), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: model '{folder}': its {file} has an auto_map") and "trust_remote_code=False" in last
    assert "Do you wish to run the custom code" not in proc.stdout + proc.stderr
    assert not (folder / "RAN-CODE").exists() and sorted(p.name for p in folder.iterdir()) == before
    assert not [p for p in cache.rglob("*") if p.is_file() and not p.name.endswith(".lock")]


@pytest.mark.parametrize("fault", ["weights of another family", "an attention weight lost"])
def test_weights_that_do_not_fit_are_refused_and_nothing_is_cached(fault, tmp_path, cache, texts_file, capsys):
    from connlap_lite.__main__ import main
    folder = tiny_models.make_folder(tmp_path / "model")
    if fault == "weights of another family":
        tiny_models.with_weights_of(folder, tiny_models.save_family("gpt2", tmp_path / "gpt2"))
        key = "model.embed_tokens.weight"
    else:
        key = "model.layers.0.self_attn.v_proj.weight"
        tiny_models.without_weight(folder, key)
    out = tmp_path / "report.json"
    assert main(_cli_args(folder, texts_file, out)) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"the weights file {folder / 'model.safetensors'} leaves" in err and f"missing from the file: {key}" in err
    assert "save the model's own weights into its folder" in err
    assert not out.exists() and not [p for p in cache.rglob("*") if p.is_file() and not p.name.endswith(".lock")]


# ------------------------------------------------------------------ reports that lie
@pytest.mark.parametrize("damage", ["passages cut short", "heads cut short", "a boolean", "a string"])
def test_a_cached_report_that_lies_is_recomputed(tiny_folder, cache, tiny_report_args, damage):
    first = _analyze(tiny_folder, **tiny_report_args)
    [path] = list((cache / "measurements").glob("*.json"))
    report = json.loads(path.read_text())
    values = report["conditions"]["random0"]
    if damage == "passages cut short":
        values["sink"][1] = values["sink"][1][:1]
    elif damage == "heads cut short":
        values["head_defect"][0] = values["head_defect"][0][:2]
    else:
        values["sink"][0][0] = True if damage == "a boolean" else "0.5"
    path.write_text(json.dumps(report))
    with pytest.warns(UserWarning, match=r"not usable \(random0/(sink|head_defect) layer [01] holds"):
        again = _analyze(tiny_folder, **tiny_report_args)
    assert again["conditions"] == first["conditions"]


def test_a_fifo_in_place_of_a_cache_file_does_not_hang(tiny_folder, cache, tiny_report_args):
    import signal
    first = _analyze(tiny_folder, **tiny_report_args)
    [path] = list((cache / "measurements").glob("*.json"))
    path.unlink()
    os.mkfifo(path)
    signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("analyze hung on a FIFO")))
    signal.alarm(300)
    try:
        with pytest.warns(UserWarning, match="cannot be read .*not a regular file .*recomputing it"):
            again = _analyze(tiny_folder, **tiny_report_args)
    finally:
        signal.alarm(0)
    assert again["conditions"] == first["conditions"] and path.is_file()      # replaced by the report


def _report_file(tmp_path, name, model="m", seed=0) -> Path:
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from fake_reports import fake
    path = tmp_path / name
    path.write_text(json.dumps({**fake(model, seed=seed), "schema": "x"}))
    return path


def test_the_scorecard_counts_each_model_once_and_reads_no_fifo(tmp_path, capsys):
    from connlap_lite.__main__ import main
    a, b = _report_file(tmp_path, "a.json"), _report_file(tmp_path, "b.json", seed=1)
    assert main(["scorecard", str(a), str(a)]) == 2
    assert f"error: {a} is given twice" in capsys.readouterr().err
    assert main(["scorecard", str(a), str(b)]) == 1
    assert f"error: {a} and {b} are both reports on model 'm': a model counts once" in capsys.readouterr().err
    fifo = tmp_path / "c.json"
    os.mkfifo(fifo)
    assert main(["scorecard", str(fifo)]) == 2
    assert f"error: {fifo}: not a regular file" in capsys.readouterr().err
    edited = json.loads(a.read_text())
    edited["passages"] = 16
    edited["conditions"]["trained"]["data_defect_nosink"][0] = edited["conditions"]["trained"]["data_defect_nosink"][0][:2]
    a.write_text(json.dumps(edited))
    assert main(["scorecard", str(a)]) == 1
    assert f"error: {a} is not a measurement record" in capsys.readouterr().err


# ------------------------------------------------------------------ figures
def test_a_failed_figure_names_the_file_the_option_and_what_was_written(tiny_folder, texts_file, tmp_path, cache,
                                                                       monkeypatch, capsys):
    import errno
    import matplotlib.figure
    from connlap_lite.__main__ import SUMMARY, main
    real, calls = matplotlib.figure.Figure.savefig, []

    def full(self, path, *args, **kw):
        calls.append(path)
        if len(calls) == 3:
            Path(path).write_bytes(b"\x89PNG half")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, path, *args, **kw)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    figures = tmp_path / "figures"
    assert main(["analyze", str(tiny_folder), "--texts", str(texts_file), "--passages", "2", "--tokens", "12",
                 "--figures", str(figures)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    third = figures / f"{SUMMARY[2]}.png"
    assert err.startswith(f"error: --figures {figures}: the figure {third} could not be written (No space left on "
                          f"device); written before it: {SUMMARY[0]}.png, {SUMMARY[1]}.png"), err
    assert sorted(p.name for p in figures.iterdir()) == sorted(f"{m}.png" for m in SUMMARY[:2])   # no torn figure


def test_figures_inside_the_model_are_refused(tiny_folder, texts_file, cache, capsys):
    from connlap_lite.__main__ import main
    before = sorted(p.name for p in tiny_folder.iterdir())
    assert main(["analyze", str(tiny_folder), "--figures", str(tiny_folder / "figs")]) == 2
    assert "is inside the model's folder" in capsys.readouterr().err
    assert sorted(p.name for p in tiny_folder.iterdir()) == before


# ------------------------------------------------------------------ memory
def test_memory_is_refused_before_the_forward_and_nothing_is_cached(tiny_folder, texts_file, tmp_path, cache,
                                                                   monkeypatch, capsys):
    from connlap_lite.models import extraction, memory
    from connlap_lite.__main__ import main
    monkeypatch.setattr(memory, "available_bytes", lambda device="cpu": 10 ** 6)
    forwards = []
    monkeypatch.setattr(extraction, "streamed_layers", lambda *a, **k: forwards.append(1))
    assert main(["analyze", str(tiny_folder), "--texts", str(texts_file), "--passages", "2", "--tokens", "12"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: '{tiny_folder}': 2 passages of 12 tokens need about ") and \
        "but 0.00 GiB are available on cpu: pass fewer passages or tokens (--passages or --tokens)" in err, err
    assert forwards == [] and not [p for p in cache.rglob("*") if p.is_file() and not p.name.endswith(".lock")]


PEAK = r"""
import json, sys, torch
from transformers import AutoModelForCausalLM, LlamaConfig
from connlap_lite.measure import analysis
from connlap_lite.models import memory
B, n = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
config = LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                     intermediate_size=64, vocab_size=100, max_position_embeddings=n)
model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
ids = lambda b, m: torch.randint(1, 100, (b, m), generator=torch.Generator().manual_seed(0))
analysis.measure(model, {"input_ids": ids(2, 16)}, encoder=False)          # lazy imports, first allocations

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

estimates = []
check = memory.check_memory
analysis.check_memory = lambda m, *a, **k: estimates.append(check(m, *a, **k)["total"])
open("/proc/self/clear_refs", "w").write("5")                             # the peak (VmHWM) from here
base = status("VmRSS:")
analysis.measure(model, {"input_ids": ids(B, n)}, encoder=False)
print(json.dumps({"peak": status("VmHWM:") - base, "estimate": estimates[0]}))
"""


@pytest.mark.parametrize("B, n", [(2, 512), (1, 768)])
def test_the_memory_estimate_bounds_the_real_peak(B, n, tmp_path):
    """measure's estimate (memory.peak_bytes, what check_memory refuses by) against the resident memory the
    measurement adds at its peak on a tiny model, whose attention and walks dominate: an upper bound, within
    memory.FACTOR."""
    from connlap_lite.models import memory
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("no /proc/self/clear_refs here: the peak cannot be reset")
    proc = subprocess.run([sys.executable, "-c", PEAK, str(B), str(n)], env=_child_env(tmp_path / "cache"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = tiny_models.parse(proc.stdout)
    assert got["peak"] <= got["estimate"] <= memory.FACTOR * got["peak"], got
