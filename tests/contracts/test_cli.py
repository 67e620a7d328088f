"""The command line fails fast and in one line: outputs checked before the analysis, no traceback, no retries."""
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import tiny_models


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return tiny_models.make_folder(tmp_path_factory.mktemp("cli") / "model")


def cli(*args, cache, extra_env=None, timeout=300):
    env = {**os.environ, "CONNLAP_CACHE": str(cache), "OMP_NUM_THREADS": "1", **(extra_env or {})}
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "connlap_lite", *map(str, args)], capture_output=True, text=True,
                       env=env, timeout=timeout)
    return r, time.perf_counter() - start


def one_error_line(r) -> str:
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    return errors[0]


def test_two_layer_model_runs_and_prints_nan_for_an_undefined_trend(tiny_folder, tmp_path):
    out = tmp_path / "sub" / "r.json"
    r, _ = cli("analyze", tiny_folder, "--passages", 2, "--tokens", 12, "--json", out, "--figures", tmp_path / "figs",
               cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith("tv_norm ")]
    assert rows and all(row[-2:] == ["nan", "nan"] for row in rows)    # one step: rho and p undefined, not p = 0
    assert out.exists() and (tmp_path / "figs" / "tv_norm.png").exists()
    # what a newcomer reads: the table's legend, the known results by name, why a verdict has too little data
    text = r.stdout
    legend = " ".join(text[text.index("legend:"):text.index("known results")].split())
    assert all(f" {m}: " in legend for m in ("tv_norm", "spec", "cross", "rev", "sink", "head_defect",
                                              "head_defect_gain", "data_defect", "edge_defect"))
    assert "rho: Spearman's correlation" in legend and "random0: the same architecture at random" in legend
    assert "Attention sinks: sink rate: natural >= random >= repeated" in text and "sink_order" not in text
    assert "E1: insufficient data: 2 passages, the rule needs at least 8: run again with --passages 8 or more" in text
    assert "2 layers, the rule compares the first and the last third of at least 3" in text


def test_figures_are_wide_with_legends_off_the_data_and_show_e1s_metric(tiny_folder, tmp_path, monkeypatch):
    """Every figure at least 800 px wide, its legend (measured in the drawn figure) outside its panels; one of
    them E1's metric with its nulls."""
    import matplotlib
    import matplotlib.pyplot as plt

    matplotlib.use("Agg")
    from connlap_lite import __main__ as M

    boxes = []
    save = matplotlib.figure.Figure.savefig

    def savefig(fig, path, **kw):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legends = [a.get_legend() for a in fig.axes if a.get_legend()] + list(fig.legends)
        panels = [a.get_window_extent(renderer) for a in fig.axes if a.get_visible()]
        boxes.append((Path(path).name, [lg.get_window_extent(renderer) for lg in legends], panels))
        return save(fig, path, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    assert M.main(["analyze", str(tiny_folder), "--passages", "2", "--tokens", "12", "--figures",
                   str(tmp_path / "figs")]) == 0
    plt.close("all")
    assert len(boxes) == 10
    for name, legends, panels in boxes:
        assert legends, f"{name} has no legend"
        for legend in legends:
            assert not any(legend.overlaps(panel) for panel in panels), name
    from PIL import Image

    names = sorted(p.name for p in (tmp_path / "figs").glob("*.png"))
    assert "e1_tv_norm_nosink.png" in names and "tv_norm.png" in names and len(names) == 10
    for name in names:
        assert Image.open(tmp_path / "figs" / name).size[0] >= 800, name


def test_help_is_whole_and_names_every_option(capsys):
    from connlap_lite.__main__ import DESCRIPTION, _parser

    ap = _parser()
    assert DESCRIPTION.endswith(".") and "(the console" not in DESCRIPTION
    text = ap.format_help()
    assert " ".join(DESCRIPTION.split()) in " ".join(text.split())
    for parser in (ap, *ap.commands.values()):
        for action in parser._actions:
            assert action.help, f"{parser.prog} {action.option_strings or action.dest} has no help"


@pytest.mark.parametrize("make, option, message", [
    (lambda p: p.mkdir(), "--json", "is a folder; give a file path"),
    (lambda p: p.write_text("x"), "--figures", "is a file; give a folder"),
    (lambda p: (p.parent / "blocker").write_text("x"), "--json", "cannot write into"),
    (lambda p: (p.parent / "blocker").write_text("x"), "--figures", "cannot write into"),
])
def test_outputs_are_checked_before_the_analysis(tiny_folder, tmp_path, make, option, message):
    target = tmp_path / "out"
    make(target)
    if "blocker" in str([p.name for p in tmp_path.iterdir()]):
        target = tmp_path / "blocker" / "inside"                  # a file where a folder must be
    r, seconds = cli("analyze", "no-such-model-anywhere", option, target, cache=tmp_path / "cache")
    assert r.returncode == 2
    line = one_error_line(r)
    assert option in line and message in line
    assert not (tmp_path / "cache" / "measurements").exists()      # nothing was measured


def test_unwritable_json_folder_fails_before_loading(tmp_path):
    if os.geteuid() == 0:
        # root writes anywhere: a read-only file system stands in for permissions
        target = Path("/proc/connlap-report.json")
    else:
        locked = tmp_path / "ro"
        locked.mkdir()
        locked.chmod(0o500)
        target = locked / "r.json"
    r, seconds = cli("analyze", "smollm2-135m", "--json", target, cache=tmp_path / "cache")
    assert r.returncode == 2 and "--json" in one_error_line(r) and seconds < 60


def test_unknown_model_fails_fast_without_network(tmp_path):
    env = {"HF_HUB_OFFLINE": "", "HF_ENDPOINT": "http://127.0.0.1:9", "HTTPS_PROXY": "", "https_proxy": "",
           "ALL_PROXY": "", "all_proxy": ""}
    r, seconds = cli("analyze", "surely-not/a-model", "--passages", 2, cache=tmp_path / "cache", extra_env=env)
    assert r.returncode == 1 and seconds < 20
    line = one_error_line(r)
    assert "cannot load 'surely-not/a-model'" in line and "Offline short names: minilm-l6" in line


@pytest.mark.parametrize("args, message", [
    (["--passages", "1"], "--passages must be at least 2"),
    (["--passages", "two"], "invalid int value"),
    (["--tokens", "4"], "--tokens must be at least 8"),
    (["--seed", "-1"], "--seed must be a nonnegative int"),
    (["--device", "gpu"], "--device must be cpu, cuda"),
    (["--texts", "/no/such/file.txt"], "no such file"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_options_give_one_error_line(tmp_path, args, message):
    r, _ = cli("analyze", "smollm2-135m", *args, cache=tmp_path / "cache")
    assert r.returncode == 2 and message in one_error_line(r)


@pytest.mark.parametrize("command, args, message", [
    ("analyze", ["--passages", "two"], "argument --passages: invalid int value"),
    ("verify", ["--tol", "small"], "argument --tol: invalid float value"),
    ("verify", ["--passages", "0"], "--passages must be at least 1"),
    ("analyze", ["--tokens", "4"], "--tokens must be at least 8"),
])
def test_a_bad_argument_shows_its_own_sub_commands_usage(command, args, message, capsys):
    from connlap_lite.__main__ import main

    assert main([command, "smollm2-135m", *args]) == 2
    err = capsys.readouterr().err
    usage = [line for line in err.splitlines() if line.startswith("usage: ")]
    assert usage == [f"usage: python -m connlap_lite {command} [-h]" + usage[0].split("[-h]", 1)[1]], err
    assert message in in_process_error_line(types.SimpleNamespace(err=err))
    assert ("--tol" in err) == (command == "verify") and ("--corpus" in err) == (command == "analyze"), \
        "the usage is the sub-command's, not the top level's"


def test_an_unknown_command_shows_the_top_level_usage(capsys):
    from connlap_lite.__main__ import main

    assert main(["analyse", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m connlap_lite [-h] [--version] COMMAND")
    assert "argument COMMAND: invalid choice: 'analyse'" in in_process_error_line(types.SimpleNamespace(err=err))


def test_version_and_the_console_script(tmp_path, capsys):
    import tomllib

    import connlap_lite
    from connlap_lite.__main__ import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"connlap-lite {connlap_lite.__version__}\n"
    r, _ = cli("--version", cache=tmp_path / "cache")
    assert r.returncode == 0 and r.stdout.strip() == f"connlap-lite {connlap_lite.__version__}"
    scripts = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"connlap": "connlap_lite.__main__:main"}
    # the script's name in its usage (sys.argv[0] as the console script sets it)
    r = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = '/usr/bin/connlap'; "
                        "from connlap_lite.__main__ import main; sys.exit(main(['verify']))"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("usage: connlap verify [-h]"), r.stderr


def test_python_names_become_option_names():
    from connlap_lite.__main__ import FLAGS, _flags

    assert _flags("n_passages must be a positive int, got 0; random_init needs n_tokens") == \
        "--passages must be a positive int, got 0; --random-init needs --tokens"
    assert _flags("an n_passages_x stays") == "an n_passages_x stays"
    assert set(FLAGS.values()) <= set(main_options())


def main_options() -> set[str]:
    from connlap_lite.__main__ import _parser

    return {o for p in _parser().commands.values() for a in p._actions for o in a.option_strings}


def test_texts_that_are_not_utf8(tmp_path):
    bad = tmp_path / "t.txt"
    bad.write_bytes(b"\xff\xfe\x00bad")
    r, _ = cli("analyze", "smollm2-135m", "--texts", bad, cache=tmp_path / "cache")
    assert r.returncode == 2 and "cannot read it as UTF-8" in one_error_line(r)


def test_errors_inside_the_analysis_are_one_line(tiny_folder, tmp_path):
    r, _ = cli("analyze", tiny_folder, "--passages", 2, "--tokens", 100, cache=tmp_path / "cache")
    assert r.returncode == 1
    line = one_error_line(r)
    assert "--tokens must be at most 64" in line and "n_tokens" not in line, "the option, not the Python name"


def test_no_cache_overwrites_a_damaged_report(tiny_folder, tmp_path):
    cache = tmp_path / "cache"
    r, _ = cli("analyze", tiny_folder, "--passages", 2, "--tokens", 12, cache=cache)
    assert r.returncode == 0, r.stderr[-2000:]
    [path] = list((cache / "measurements").glob("*.json"))
    path.write_text('{"schema": "truncated')
    r, _ = cli("analyze", tiny_folder, "--passages", 2, "--tokens", 12, "--no-cache", cache=cache)
    assert r.returncode == 0 and path.read_text().startswith('{"schema"') and path.read_text().endswith("}")


@pytest.fixture(scope="module")
def neox_folder(tmp_path_factory):
    return tiny_models.make_gpt_neox_folder(tmp_path_factory.mktemp("cli-neox") / "model")


def in_process_error_line(captured) -> str:
    """``one_error_line`` of what capsys captured from an in-process ``main``."""
    return one_error_line(types.SimpleNamespace(stderr=captured.err))


def verify_rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.split() and line.split()[0].isdigit()]


def test_verify_prints_every_layer_within_the_tolerance(tiny_folder, tmp_path):
    r, _ = cli("verify", tiny_folder, "--passages", 2, "--tokens", 12, cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "llama, decoder, 2 layers, H=4, G=2, d=32, head_dim=8; 2 passages x 12 tokens" in r.stdout
    rows = verify_rows(r.stdout)
    assert [row[0] for row in rows] == ["0", "1"] and all(float(row[1]) < 1e-5 for row in rows)
    assert "every layer within 1e-4" in r.stdout


def test_verify_a_gpt_neox_model_in_process(neox_folder, tmp_path, monkeypatch, capsys):
    from connlap_lite.__main__ import main

    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    assert main(["verify", str(neox_folder), "--passages", "2", "--tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "gpt_neox, decoder, 2 layers, H=4, G=4" in out
    assert all(float(row[1]) < 1e-5 for row in verify_rows(out)) and len(verify_rows(out)) == 2


def test_verify_fails_on_a_misread_architecture(neox_folder, tmp_path, monkeypatch, capsys):
    """NeoX's head-interleaved fused qkv read as GPT-2's (all values in its last third): every layer misses."""
    from connlap_lite.__main__ import main
    from connlap_lite.models.adapters import gpt_neox

    def gpt2_style(model, layer):
        a = model.gpt_neox.layers[layer].attention
        return a.query_key_value.weight[64:], a.query_key_value.bias[64:], a.dense.weight, a.dense.bias

    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gpt_neox, "value_output", gpt2_style)
    assert main(["verify", str(neox_folder), "--passages", "2", "--tokens", "16"]) == 1
    captured = capsys.readouterr()
    rows = verify_rows(captured.out)
    assert len(rows) == 2 and all(float(row[1]) > 1e-2 and row[-1] == "MISSES" for row in rows)
    line = in_process_error_line(captured)
    assert "layer 0 of gpt_neox: the walk misses the module's output by" in line and "layer 1 of gpt_neox" in line
    assert "(> 1e-4)" in line and "the adapter misreads this architecture" in line


@pytest.mark.parametrize("args, message", [
    (["--passages", "0"], "--passages must be at least 1"),
    (["--tokens", "4"], "--tokens must be at least 8"),
    (["--tol", "0"], "--tol must be a positive number"),
    (["--device", "gpu"], "--device must be cpu, cuda"),
])
def test_verify_bad_options_give_one_error_line(args, message, tmp_path, monkeypatch, capsys):
    from connlap_lite.__main__ import main

    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    assert main(["verify", "smollm2-135m", *args]) == 2
    assert message in in_process_error_line(capsys.readouterr())


def test_verify_refuses_more_tokens_than_positions(tiny_folder, tmp_path):
    r, _ = cli("verify", tiny_folder, "--passages", 2, "--tokens", 100, cache=tmp_path / "cache")
    assert r.returncode == 1 and "--tokens must be at most 64" in one_error_line(r)


def test_scorecard_over_json_reports(tmp_path, capsys):
    """`scorecard REPORT...` prints one line per claim and structure from reports written as JSON."""
    import json

    from connlap_lite.__main__ import main
    from fake_reports import fake

    paths = []
    for name, family, size in (("a", "llama", 1e8), ("b", "llama", 1e9), ("c", "llama", 1e10), ("enc", "bert", 1e8)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(fake(name, family=family, size=size, encoder=name == "enc")))
        paths.append(str(path))
    assert main(["scorecard", *paths]) == 0
    out = capsys.readouterr().out
    assert "E1 decoder" in out and "E3 decoder" in out and "llama: slope" in out and "E2 encoder" in out
    assert main(["scorecard", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["scorecard", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err
    assert "no such file" in err and "cannot be read as JSON" in err


def test_scorecard_names_a_malformed_report_file_and_its_problem(tmp_path, capsys):
    """Each file is made a Report as it is read: a record of the wrong shape, or one without what the scorecard
    reads, is refused with the file's name and the problem, before any rule runs."""
    import json

    from connlap_lite.__main__ import main
    from fake_reports import fake

    good = tmp_path / "good.json"
    good.write_text(json.dumps(fake("a")))
    short = fake("b")
    short["conditions"]["trained"]["head_defect"].pop()                          # a layer missing
    (tmp_path / "short.json").write_text(json.dumps(short))
    assert main(["scorecard", str(good), str(tmp_path / "short.json")]) == 1
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'short.json'} is not a measurement record" in err
    assert "trained/head_defect holds" in err and "analyze MODEL --json FILE" in err
    (tmp_path / "anonymous.json").write_text(json.dumps({k: v for k, v in fake("c").items() if k != "family"}))
    assert main(["scorecard", str(good), str(tmp_path / "anonymous.json")]) == 1
    assert f"error: {tmp_path / 'anonymous.json'} lacks ['family']" in capsys.readouterr().err


# --- analyze end to end, in a process of its own
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "connlap_lite", *args], capture_output=True, text=True, timeout=600)


def test_cli_rejects_bad_arguments(tmp_path):
    r = run_cli("analyze", "minilm-l6", "--passages", "1")
    assert r.returncode == 2 and "--passages must be at least 2" in r.stderr
    r = run_cli("analyze", "minilm-l6", "--texts", str(tmp_path / "missing.txt"))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run_cli("analyze", "minilm-l6", "--json", str(tmp_path))
    assert r.returncode == 2 and "is a folder" in r.stderr
    r = run_cli("analyze")
    assert r.returncode == 2 and "model" in r.stderr
    r = run_cli("analyze", "no-such-model-here", "--no-cache")
    assert r.returncode == 1 and "Offline short names" in r.stderr


def test_cli_analyze_offline_model(tmp_path):
    texts = tmp_path / "t.txt"
    texts.write_text("\n\n".join(["The connection walk carries each message along its edge. " * 20] * 3))
    out = tmp_path / "r.json"
    r = run_cli("analyze", "minilm-l6", "--texts", str(texts), "--passages", "3", "--tokens", "16",
                "--json", str(out), "--no-cache")
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads(out.read_text())
    assert rep["layers"] == 6 and rep["encoder"] and set(rep["conditions"]) == {"trained", "shuffled", "shuffled1", "shuffled2", "shuffled3", "shuffled4"} | {f"random{s}" for s in range(5)}
    # three passages are below the rules' minimum (connlap_lite.verdicts.words.MIN_PASSAGES): too little data for a verdict
    assert rep["verdicts"]["E1"]["verdict"] == "insufficient data" and "cross_passage_tv_norm_nosink" in rep["conditions"]["trained"]
    assert rep["verdicts"]["E2"]["verdict"] == "insufficient data" and "sink_columns" in rep
    assert len(rep["conditions"]["trained"]["head_defect"]) == 6
    assert len(rep["conditions"]["trained"]["tv"]) == 5
    assert "head_defect" in r.stdout
