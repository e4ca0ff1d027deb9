"""Calibration profiles: the fit recovers a known efficiency, a profile fitted on one real Jean Zay
run predicts the others better than the defaults, the file round-trips and is checked, and
`ppviz calibrate` / `--calibration` work end to end with one-line refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.estimate import Layout, SpecError, calibration_v100, gpu, model, profile, profile_fit
from ppviz.measured.megatron import read_log
from ppviz.units import duration

DATA = Path(__file__).parent / "data" / "measured" / "bigscience"
V100 = "v100-sxm2-32gb"


def small(pp: int, gbs: int = 4):
    """A small GPT on the V100 preset: cheap to estimate many times."""
    m = model("gpt3-175b", layers=8, hidden=1024, heads=16, kv_heads=16, ffn=4096, vocab=51200, seq=1024)
    return m, Layout(tp=2, pp=pp, mbs=1, gbs=gbs, recompute="full", precision="fp16")


def measured_at(label: str, pp: int, **eff) -> profile_fit.Measured:
    """A run whose 'measured' time is ppviz's own under the efficiencies ``eff``."""
    m, lay = small(pp)
    return profile_fit.Measured(label, m, lay, ppviz.estimate(m, gpu(V100, **eff), lay).iteration_s)


# --- the real run set -----------------------------------------------------------------------


@pytest.mark.parametrize("run", calibration_v100.RUNS, ids=lambda r: r.file)
def test_jean_zay_runs_are_what_their_logs_say(run):
    """Every figure of calibration_v100.RUNS is read from its log excerpt: shape, layout, batch, median."""
    log = read_log(DATA / run.file)
    a = log.arguments
    assert (int(a["hidden_size"]), int(a["num_layers"]), int(a["pipeline_model_parallel_size"])) == (
        run.hidden, run.layers, run.pp)  # fmt: skip
    assert (int(a["micro_batch_size"]), int(a["global_batch_size"])) == (run.mbs, run.gbs)
    assert a["tensor_model_parallel_size"] == "4" and a["data_parallel_size"] == "1"
    assert a["num_attention_heads"] == "32" and a["seq_length"] == "1024"
    assert a["fp16"] == "True" and a["checkpoint_activations"] == "True"
    assert a["virtual_pipeline_model_parallel_size"] == "None"
    assert "new size: 50688" in (DATA / run.file).read_text(encoding="utf-8")
    assert log.median_iteration_s() * 1e3 == pytest.approx(run.iteration_ms)
    m = run.measured()
    assert m.layout.gpus == 4 * run.pp and m.layout.microbatches == run.gbs // run.mbs


def test_profile_fitted_on_one_layout_predicts_the_others_better_than_the_default():
    """The issue's "done means": fitted on the throughput run only, every other run of the set is
    predicted closer to its measured time than with the default efficiencies."""
    prof = calibration_v100.fitted_profile()
    assert prof.fitted == ("matmul_efficiency",) and prof.mean_abs_error < 0.01
    default, calibrated = gpu(V100), prof.apply(gpu(V100))
    others = [r.measured() for r in calibration_v100.RUNS if r is not calibration_v100.FIT_ON]
    before = [abs(t / r.iteration_s - 1) for t, r in zip(profile_fit.predict(others, default), others)]
    after = [abs(t / r.iteration_s - 1) for t, r in zip(profile_fit.predict(others, calibrated), others)]
    for r, b, a in zip(others, before, after):
        assert a < b, r.label
    assert sum(after) / len(after) < 0.5 * sum(before) / len(before)


def test_a_profile_fitted_on_any_one_run_predicts_the_others_better_on_average():
    for one in calibration_v100.each_fit():
        b, a = one.default_errors, one.calibrated_errors
        assert len(a) == len(calibration_v100.RUNS) - 1
        assert sum(a) < sum(b), one.run.label


def test_table_reports_every_run_with_default_and_calibrated_errors():
    text = calibration_v100.table()
    assert text.count("| predicted |") == len(calibration_v100.RUNS) - 1 and text.count("| fit |") == 1
    assert "mean |error|" in text


# --- the fit ----------------------------------------------------------------------------------


def test_fit_recovers_a_known_matmul_efficiency():
    prof = profile_fit.fit([measured_at("pp 2", 2, matmul_efficiency=0.61)], V100)
    assert dict(prof.efficiencies)["matmul_efficiency"] == 0.61
    assert prof.mean_abs_error < 1e-9 and prof.gpu == V100
    row = prof.runs[0]
    assert row["calibrated_s"] == pytest.approx(row["measured_s"]) and row["default_s"] < row["measured_s"]
    assert row["layout"]["pp"] == 2 and row["model"]["hidden"] == 1024


def test_fit_of_two_efficiencies_on_two_runs():
    runs = [measured_at(f"pp {p}", p, matmul_efficiency=0.5, network_efficiency=0.3) for p in (2, 4)]
    prof = profile_fit.fit(runs, V100, ["matmul_efficiency", "network_efficiency"], grid=(0.3, 0.5, 0.8))
    assert dict(prof.efficiencies)["matmul_efficiency"] == 0.5
    assert prof.mean_abs_error < 1e-6


def test_an_efficiency_the_runs_do_not_depend_on_keeps_its_value():
    run = measured_at("pp 1", 1, matmul_efficiency=0.6)  # one GPU column: no network at all
    prof = profile_fit.fit([run, run], V100, ["network_efficiency", "matmul_efficiency"])
    assert dict(prof.efficiencies)["network_efficiency"] == gpu(V100).network_efficiency


@pytest.mark.parametrize(
    ("fields", "n", "message"),
    [(["matmul_efficiency", "hbm_efficiency"], 1, "needs at least 2 measured runs"),
     (["kernel_overhead_s"], 1, "fit names efficiencies"), (["matmul_efficiency"], 0, "at least one")],
)  # fmt: skip
def test_fit_refusals(fields, n, message):
    runs = [measured_at("a", 2)] * n
    with pytest.raises(SpecError, match=message):
        profile_fit.fit(runs, V100, fields)


def test_measured_time_must_be_positive():
    m, lay = small(2)
    with pytest.raises(SpecError, match="> 0"):
        profile_fit.Measured("zero", m, lay, 0.0)


# --- the file and its use -------------------------------------------------------------------


def test_profile_round_trips_and_applies(tmp_path):
    prof = profile_fit.fit([measured_at("pp 2", 2, matmul_efficiency=0.6)], V100)
    path = tmp_path / "p.json"
    prof.save(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["format"] == "ppviz-calibration/1" and doc["fitted"] == ["matmul_efficiency"]
    assert set(doc["residual"]) == {"mean_abs_error", "max_abs_error", "runs"}
    back = profile.load(path)
    assert back.efficiencies == prof.efficiencies and back.runs == prof.runs and back.gpu == V100
    m, lay = small(2)
    by_path = ppviz.estimate(m, V100, lay, calibration=str(path))
    by_gpu = ppviz.estimate(m, back.apply(gpu(V100)), lay)
    assert by_path.iteration_s == by_gpu.iteration_s
    assert by_path.gpu.matmul_efficiency == 0.6
    kept = back.apply(gpu(V100, matmul_efficiency=0.7), keep=("matmul_efficiency",))
    assert kept.matmul_efficiency == 0.7


def test_profile_is_refused_on_another_gpu(tmp_path):
    prof = profile_fit.fit([measured_at("pp 2", 2)], V100)
    with pytest.raises(SpecError, match="fitted on v100-sxm2-32gb, not a100-80gb") as err:
        prof.apply(gpu("a100-80gb"))
    assert err.value.field == "calibration"


def _profile_doc() -> dict:
    eff = dict.fromkeys(profile.FIELDS, 0.5)
    return {"format": profile.FORMAT, "gpu": V100, "efficiencies": eff, "fitted": ["matmul_efficiency"]}


@pytest.mark.parametrize(
    ("change", "message"),
    [({"format": "ppviz-calibration/9"}, "format must be"), ({"gpu": ""}, "gpu must name"),
     ({"efficiencies": {"matmul_efficiency": 0.5}}, "exactly"), ({"fitted": ["speed"]}, "fitted must list"),
     ({"efficiencies": {**dict.fromkeys(profile.FIELDS, 0.5), "hbm_efficiency": 1.5}}, r"in \(0, 1\]"),
     ({"runs": {}}, "runs a list")],
)  # fmt: skip
def test_bad_profile_files_are_refused_with_the_reason(tmp_path, change, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**_profile_doc(), **change}), encoding="utf-8")
    with pytest.raises(SpecError, match=message) as err:
        profile.load(path)
    assert str(path) in str(err.value) and err.value.field == "calibration"


def test_unreadable_profile_files(tmp_path):
    (tmp_path / "x.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SpecError, match="is not JSON"):
        profile.load(tmp_path / "x.json")
    with pytest.raises(SpecError, match="cannot read"):
        profile.load(tmp_path / "missing.json")


# --- the command line -------------------------------------------------------------------------

SMALL = ["--model", "gpt3-175b", "--layers", "8", "--hidden", "1024", "--heads", "16", "--kv-heads", "16",
         "--ffn", "4096", "--vocab", "51200", "--seq", "1024", "--gpu", V100]  # fmt: skip
LAYOUT = ["--tp", "2", "--pp", "2", "--gbs", "4", "--recompute", "full", "--precision", "fp16", "--zero", "0",
          "--no-sequence-parallel"]  # fmt: skip


def test_calibrate_from_a_time_then_estimate_with_it(tmp_path, capsys):
    target = measured_at("pp 2", 2, matmul_efficiency=0.55).iteration_s * 1e3
    out = tmp_path / "p.json"
    assert main(["calibrate", *SMALL, *LAYOUT, "--iteration-ms", repr(target), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fitted matmul_efficiency 0.55" in text and "residual: mean |error| 0.00%" in text
    assert main(["estimate", *SMALL, *LAYOUT, "--calibration", str(out), "--json", "--no-ops"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["gpu"]["matmul_efficiency"] == 0.55 and d["iteration_s"] * 1e3 == pytest.approx(target)
    argv = ["estimate", *SMALL, *LAYOUT, "--calibration", str(out), "--matmul-efficiency", "0.7", "--json", "--no-ops"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["gpu"]["matmul_efficiency"] == 0.7  # the flag wins
    html = tmp_path / "page.html"
    assert main(["render", "1f1b", *SMALL, *LAYOUT, "--calibration", str(out), "-o", str(html)]) == 0
    assert f"iteration {duration(d['iteration_s'])}" in capsys.readouterr().out
    argv = ["search", *SMALL, "--gpus", "4", "--gbs", "4", "--schedules", "1f1b", "--recompute", "full", "--no-pareto",
            "--calibration", str(out), "--json", "--top", "1"]  # fmt: skip
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["layouts"]


def test_calibrate_from_a_megatron_log(tmp_path, capsys):
    run = calibration_v100.RUNS[1]  # tp 4 pp 4, the cheapest to estimate
    model_flags = ["--model", "gpt3-175b", "--layers", str(run.layers), "--hidden", str(run.hidden), "--heads", "32",
                   "--kv-heads", "32", "--ffn", str(4 * run.hidden), "--vocab", "50688", "--seq", "1024"]  # fmt: skip
    argv = ["calibrate", *model_flags, "--gpu", V100, "--tp", "4", "--pp", str(run.pp), "--gbs", str(run.gbs),
            "--recompute", "full", "--precision", "fp16", str(DATA / run.file), "-o", str(tmp_path / "p.json"),
            "--json"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"][0]["label"] == run.file
    assert doc["runs"][0]["measured_s"] == pytest.approx(run.iteration_ms / 1e3)
    assert doc["residual"]["mean_abs_error"] < 0.01


def test_calibrate_from_a_runs_file(tmp_path, capsys):
    rows = []
    for p in (2, 4):
        t = measured_at(f"pp {p}", p, matmul_efficiency=0.6).iteration_s * 1e3
        rows.append(f'[[run]]\nlabel = "pp {p}"\niteration_ms = {t!r}\nmodel = {{ layers = 8 }}\n'
                    f'layout = {{ tp = 2, pp = {p}, gbs = 4, recompute = "full", precision = "fp16" }}\n')  # fmt: skip
    (tmp_path / "runs.toml").write_text("\n".join(rows), encoding="utf-8")
    argv = ["calibrate", *SMALL, "--runs", str(tmp_path / "runs.toml"), "-o", str(tmp_path / "p.json"), "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in doc["runs"]] == ["pp 2", "pp 4"]
    assert doc["efficiencies"]["matmul_efficiency"] == 0.6


@pytest.mark.parametrize(
    ("extra", "runs", "message"),
    [([], None, "nothing measured"),
     (["--iteration-ms", "100", "x.log"], None, "not both"),
     (["--iteration-ms", "100", "--fit", "matmul_efficiency,hbm_efficiency"], None, "needs at least 2"),
     (["--fit", "speed"], None, "--fit takes names"),
     ([], '[[run]]\nlabel = "a"\niteration_ms = 5\nlayout = { pp = 2 }\nspeed = 1\n', "unknown key speed"),
     ([], '[[run]]\nlayout = { pp = 2 }\n', "give log"),
     ([], '[[run]]\niteration_ms = 5\nlayout = { pp = 3 }\n', "run 'run 1': 8 layers do not split"),
     ([], '[[run]]\niteration_ms = 5\nlayout = { pp = 99999999 }\n', "layout pp 99999999 is out of range"),
     ([], '[[run]]\niteration_ms = 5\nmodel = { layers = 0 }\nlayout = { pp = 2 }\n', "model layers 0 is out"),
     (["--iteration-ms", "0"], None, "--iteration-ms 0 is out of range"),
     ([], '[[run]]\nlog = "missing.out"\nlayout = { pp = 2 }\n', "cannot read"),
     ([], 'run = 3\n', "expected one \\[\\[run\\]\\]"),
     ([], 'run = [\n', "is not TOML")],
)  # fmt: skip
def test_calibrate_refusals_are_one_line(tmp_path, capsys, extra, runs, message):
    argv = ["calibrate", *SMALL, *LAYOUT, *extra, "-o", str(tmp_path / "p.json")]
    if runs is not None:
        (tmp_path / "runs.toml").write_text(runs, encoding="utf-8")
        argv += ["--runs", str(tmp_path / "runs.toml")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert re.search(message, err), err
    assert not (tmp_path / "p.json").exists()


def test_estimate_refuses_a_missing_or_foreign_profile(tmp_path, capsys):
    assert main(["estimate", *SMALL, *LAYOUT, "--calibration", str(tmp_path / "none.json")]) == 2
    assert "cannot read calibration" in capsys.readouterr().err
    prof = profile_fit.fit([measured_at("pp 2", 2)], V100)
    prof.save(tmp_path / "p.json")
    assert (
        main(["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--calibration", str(tmp_path / "p.json")]) == 2
    )
    assert "fitted on v100-sxm2-32gb, not h100-sxm" in capsys.readouterr().err
