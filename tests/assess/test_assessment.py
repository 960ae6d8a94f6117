"""What a sweep's data say (harness.assess.assessment): a batch-size verdict per facet, confounded batch sizes, findings."""
from harness.assess.assessment import assess
from tests.helpers.sweeps import batch_sweep, make_run


def test_each_facet_gets_its_own_batch_size_verdict(tmp_path):
    sweep = tmp_path / "s"
    job = 0
    arms = [(True, {8: [0.90, 0.91], 128: [0.80, 0.81]}), (False, {8: [0.30, 0.31], 128: [0.30, 0.32]})]
    for shuffle, finals in arms:
        for batch, values in finals.items():
            for seed, final in enumerate(values):
                make_run(sweep, job, batch_size=batch, seed=seed, shuffle=shuffle, val=(final - 0.1, final))
                job += 1
    result = assess(sweep)
    assert result.facets == ["shuffle"] and {"batch_size", "seed", "shuffle"} <= set(result.varied)
    assert sorted(result.df["facet"].unique()) == ["shuffle=False", "shuffle=True"]
    assert len(result.final) == 8 and set(result.final["facet"]) == {"shuffle=False", "shuffle=True"}
    verdicts = {v.subject: v for v in result.batch_verdicts}
    assert set(verdicts) == {"shuffle=False", "shuffle=True"}
    assert verdicts["shuffle=True"].outcome == "reproduced" and verdicts["shuffle=True"].batch_sizes == [8, 128]
    assert verdicts["shuffle=False"].outcome == "inconclusive"  # at chance: 0.30 is no learning to judge
    assert [f.subject for f in result.findings] == ["Unshuffled data"]


def test_one_facet_of_batch_sizes_is_judged_as_all_runs(tmp_path):
    result = assess(batch_sweep(tmp_path / "s", {8: [0.90, 0.91], 128: [0.80, 0.81]}))
    assert result.facets == [] and set(result.df["facet"]) == {"all runs"}
    [verdict] = result.batch_verdicts
    assert verdict.subject == "all runs" and verdict.outcome == "reproduced" and verdict.n_seeds == 2
    assert result.findings == []


def test_batch_size_varied_only_with_another_key_is_one_confounded_verdict(tmp_path):
    sweep = tmp_path / "s"  # weak scaling: the global batch grows with the GPUs
    make_run(sweep, 0, batch_size=32, gpus=1, val=(0.8,))
    make_run(sweep, 1, batch_size=64, gpus=2, val=(0.7,))
    result = assess(sweep)
    assert result.facets == ["gpus"]
    [verdict] = result.batch_verdicts
    assert verdict.outcome == "inconclusive" and verdict.batch_sizes == [32, 64]
    assert "Batch size (32, 64) varies only together with gpus" in verdict.headline


def test_a_study_of_another_suspect_at_one_batch_size_gives_findings_only(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, preprocess_mismatch="none", val=(0.9,), train_eval=(0.95,))
    make_run(sweep, 1, preprocess_mismatch="unscaled", val=(0.2,), train_eval=(0.95,))
    result = assess(sweep)
    assert result.batch_verdicts == []
    [finding] = result.findings
    assert finding.subject == "Preprocessing mismatch" and finding.outcome == "reproduced"


def test_one_batch_size_without_findings_still_says_why_it_cannot_judge(tmp_path):
    result = assess(batch_sweep(tmp_path / "s", {32: [0.90, 0.91]}))
    [verdict] = result.batch_verdicts
    assert verdict.outcome == "inconclusive" and "two batch sizes" in verdict.headline
    assert result.findings == []


def test_a_sweep_without_results_has_verdicts_that_say_so_and_no_findings(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, batch_size=16, status="failed", val=(), error="no data", imbalance=0.9)
    make_run(sweep, 1, batch_size=32, status="failed", val=(), error="no data", imbalance=0.9)
    result = assess(sweep)
    assert result.final.empty and result.findings == []
    [verdict] = result.batch_verdicts
    assert verdict.outcome == "inconclusive" and "found 0" in verdict.headline


def test_the_study_sweep_json_names_chooses_the_reading_and_an_unnamed_sweep_is_read_from_its_files(tmp_path):
    """+study=tuned's sweep is read for its learning-rate grid because sweep.json names it; the same files without
    the name (the main job, an ad-hoc sweep, a sweep recorded before the name was) are detected as tuned; named
    as another study (a batch-size one), the same files get no tuned reading."""
    import json

    from tests.helpers.sweeps import study_sweep

    sweep = study_sweep(tmp_path / "tuned", "+study=tuned", "seed=0,1")
    plan = json.loads((sweep / "sweep.json").read_text())
    assert plan["study"] == "tuned"
    from harness.studies import registry

    named = registry.assess(sweep)
    assert named.reading and named.batch_verdicts == [v for t in named.reading for v in t.verdicts]
    (sweep / "sweep.json").write_text(json.dumps({**plan, "study": None}))
    detected = registry.assess(sweep)
    assert [t.group for t in detected.reading] == [t.group for t in named.reading]
    assert [v.outcome for v in detected.batch_verdicts] == [v.outcome for v in named.batch_verdicts]
    (sweep / "sweep.json").write_text(json.dumps({**plan, "study": "causes"}))
    assert registry.assess(sweep).reading is None
