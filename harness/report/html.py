"""Build one self-contained HTML report of a sweep: `python -m harness.report sweeps/<sweep-id>`.

Reads metrics.parquet and run.json files only (never TensorFlow), plots with pure functions, renders with
Jinja2 (autoescape on, so no config string can inject markup) and embeds every image, so the page works offline.
Every report rewrites the reports folder's index.html (harness.render.index); `--index` rebuilds it alone.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from harness.assess import analysis
from harness.assess.sweep import read as read_sweep
from harness.assess.verdicts import Verdict
from harness.render import figures, index, pages, summary, tables
from harness.store import command_file, files, layout
from harness.store.run_files import DONE
from harness.studies import registry

TEMPLATES = Path(__file__).resolve().parent / "templates"  # the page's own: report.html.j2
QUESTION = "does a larger batch give lower validation accuracy?"  # the page's title, unless its study asks its own
SIMULATED_NOTE = (
    "Simulated devices (simulate_devices=true) split one CPU into logical devices that share the same cores: "
    "the data-parallel code path (MirroredStrategy, or DataParallel on JAX) really runs, but their throughput says "
    "nothing about real GPUs."
)
RUNNING_NOTE = (
    "{n} run(s) still marked running. If no harness command is working on this sweep now, they were killed before "
    "they could record an end (kill -9, a crash, a lost machine); resuming the sweep runs them from their last "
    "epoch. Their wall time is unknown (–) until they finish."
)


DAMAGED_NOTE = (
    "{n} run(s) damaged: their run.json or metrics.parquet cannot be read (a full disk, or a crash during a copy); "
    "the reason is in the runs table. Resuming the sweep runs them again; completed runs with intact files are "
    "left alone."
)


def _runs_rows(df: pd.DataFrame, sweep_id: str, not_started: list[str]) -> list[dict]:
    table = analysis.runs_table(df)
    rows = []
    for record in table.to_dict("records"):
        row = {k: tables.fmt(v) for k, v in record.items()}
        row["wall_seconds"] = tables.fmt(record["wall_seconds"], 1)
        row["error_message"] = record["error_message"] if isinstance(record["error_message"], str) else None
        rows.append(row)
    blank = dict.fromkeys(rows[0], "–") if rows else {}
    rows += [{**blank, "run_id": f"{sweep_id}/{job}", "overrides": "", "status": analysis.NOT_STARTED,
              "error_message": None} for job in not_started]
    return rows


def _classes_line(df: pd.DataFrame, final: pd.DataFrame, records: list[dict], worst: int = 5) -> str:
    """The number of classes and chance accuracy, and the classes recalled worst at the final epoch: a summary
    that stays one line with 120 classes."""
    k = analysis.num_classes(df)
    line = f"{k} classes: chance accuracy 1/{k} = {1 / k:.3f} (the validation set's class balance aside)."
    recalls = [c for c in final.columns if str(c).startswith("val_recall_")]
    if final.empty or not recalls:
        return line
    names = next((r["environment"]["classes"] for r in records if r.get("environment", {}).get("classes")), None)
    means = final[recalls].mean().sort_values().head(worst)
    named = [f"class {names[int(c.rsplit('_', 1)[1])] if names else c.rsplit('_', 1)[1]}: {v:.2f}"
             for c, v in means.items()]
    return (f"{line} Lowest per-class validation recall at the final epoch, mean over completed runs: "
            f"{', '.join(named)}.")


def _environment(records: list[dict]) -> list[tuple[str, str]]:
    found = next((r["environment"] for r in records if "keras" in r.get("environment", {})),
                 records[0].get("environment", {}))
    return [(key, ", ".join(map(str, v)) if isinstance(v, list) else str(v)) for key, v in found.items()]


def index_verdicts(a) -> list:
    """The verdicts the index shows of the sweep: a sweep of many facets says it in one line, as its report does."""
    if a.facet_table is None:
        return a.batch_verdicts
    return [Verdict("", a.facet_table.rows[0].outcome, a.facet_table.headline)]


def build_report(sweep_dir: Path) -> str:
    """The report's HTML for the sweep in `sweep_dir` (complete or partial)."""
    return _built(sweep_dir)[0]


def added_note(addition: dict) -> str:
    """What the page says of seeds added after a look (python -m harness.resume --add-seeds)."""
    seeds = addition.get("seeds", [])
    return (f"Seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))} "
            f"{'were' if len(seeds) > 1 else 'was'} added to this sweep after a look at its results "
            f"(python -m harness.resume --add-seeds {len(seeds)}, {str(addition.get('at', ''))[:10]}): every verdict "
            "is read over all its seeds, and the stated levels do not account for the look (optional stopping: "
            "adding seeds until a result shows makes a false one likelier than the level says).")


def _built(sweep_dir: Path):
    """(the report's HTML, the assessment it shows, its study or None), from one reading of the runs' files."""
    sweep_dir = Path(sweep_dir)
    digest = summary.runs_digest(sweep_dir)  # before reading: a run that changes meanwhile makes the report stale
    sweep = read_sweep(sweep_dir)
    found = registry.read(sweep)  # its study found once
    study, a = found.study, found.assessment
    per_run = a.df.drop_duplicates("run_id")
    studied = study.sections(a) if study is not None else []
    drawn, why_drawn, *study_drawn = figures.sections(a, [s.figures for s in studied])
    simulated = "simulate_devices" in per_run.columns and per_run["simulate_devices"].astype(bool).any()
    not_started = sweep.not_started
    status_counts = per_run["status"].value_counts()
    if not_started:
        status_counts[analysis.NOT_STARTED] = len(not_started)
    unfinished = [f"{n} {s}" for s, n in status_counts.items() if s not in DONE]
    notes = [SIMULATED_NOTE] if simulated else []
    notes += [found.not_loaded] if found.not_loaded else []
    if "running" in status_counts:
        notes.append(RUNNING_NOTE.format(n=status_counts["running"]))
    if analysis.DAMAGED in status_counts:
        notes.append(DAMAGED_NOTE.format(n=status_counts[analysis.DAMAGED]))
    notes += [f"A run whose files cannot be read at all, left out: {line}" for line in a.df.attrs.get("unreadable", [])]
    notes += sorted({f"Inputs: {r['inputs']}" for r in sweep.records if r.get("inputs")})
    notes += [added_note(addition) for addition in (sweep.plan or {}).get("added_seeds", [])]
    template = pages.template("report.html.j2", TEMPLATES)
    one_change = registry.offering_next_steps(registry.recorded_paths(sweep.plan), one_change=True)
    generated_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    varied = [(k, pages.listed(per_run[k].tolist())) for k in a.varied]
    found = summary.summary(sweep_dir, started_at=summary.earliest(per_run["started_at"].tolist()),
                            counts=status_counts.to_dict(), varied=varied, verdicts=index_verdicts(a),
                            findings=a.findings, generated_at=generated_at, digest=digest)
    html = summary.embed_summary(found, template.render(
        sweep_id=sweep_dir.name,
        question=(study.question if study is not None and a.reading is not None else None) or QUESTION,
        sweep_dir=str(sweep_dir),
        sweep_dir_abs=shlex.quote(str(Path(sweep_dir).resolve())),
        generated_at=generated_at,
        counts={"total": int(status_counts.sum()), "by_status": list(status_counts.items())},
        partial=", ".join(unfinished),
        resume=command_file.resume_line(sweep_dir) if command_file.read(sweep_dir) else None,
        verdicts=a.batch_verdicts,
        facet_table=a.facet_table,
        facet_rows=tables.facet_rows(a.facet_table),
        verdict_first=next((v for v in a.batch_verdicts if a.facet_table and v.subject == a.facet_table.shown[0]),
                           None),
        findings=a.findings,
        why=a.why,
        next_named=[name for name in dict.fromkeys(study for v in a.batch_verdicts for study, _ in v.next_steps)
                    if name in one_change],
        next_offered=one_change,
        why_figures=why_drawn,
        verdict_sections=[pages.section(s.template, s.folder, {**s.context, "figures": shown})
                          for s, shown in zip(studied, study_drawn) if s.place == "verdict"],
        body_sections=[pages.section(s.template, s.folder, {**s.context, "figures": shown})
                       for s, shown in zip(studied, study_drawn) if s.place == "body"],
        varied=varied,
        facets=a.facets,
        constant=[(k, tables.fmt(per_run[k].iloc[0])) for k in a.keys if k in per_run.columns and k not in a.varied],
        figures=drawn,
        runs=_runs_rows(a.df, sweep_dir.name, not_started),
        environment=_environment(sweep.records),
        notes=notes,
        classes=_classes_line(a.df, a.final, sweep.records),
    ))
    return html, a, study


def report_path(sweep_dir: Path, reports_dir: Path = Path("reports")) -> Path:
    """Where the report of `sweep_dir` goes: reports/<sweep-id>-<hash of its resolved folder>.html, so that
    sweeps of one name in different folders keep a report each."""
    return Path(reports_dir) / summary.report_file_name(sweep_dir)


def write_report(sweep_dir: Path, reports_dir: Path = Path("reports"), sweeps_dir: Path | None = None) -> Path:
    """Write the sweep's report (report_path) and reports/latest.html, its study's files (a diagnosis's
    diagnosis.json) into the sweep folder, then the folder's index.html (of `sweeps_dir` too, by default the sweeps
    folder beside `reports_dir`);
    return the report's path."""
    html, a, study = _built(sweep_dir)
    for _, write in study.files(a) if study is not None else []:
        write(sweep_dir)
    target = report_path(sweep_dir, reports_dir)
    for path in (target, Path(reports_dir) / layout.LATEST_FILE):
        files.write_text(path, html)
    try:
        index.write_index(reports_dir, sweeps_dir)
    except OSError as err:  # the report is written: say why the index is not, and go on
        print(f"harness: no index: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
    return target


def publish(sweep_dir: Path, reports_dir: Path) -> None:
    """At the end of a command: write the report and print its path as the last line, or say in one line why
    there is none (no run started; a full disk or a read-only folder)."""
    try:
        print(write_report(sweep_dir, reports_dir))
    except FileNotFoundError as err:
        print(f"harness: no report: {err}", file=sys.stderr)
    except OSError as err:
        print(f"harness: no report: cannot write {err.filename}: {err.strerror}", file=sys.stderr)


class _OneLineParser(argparse.ArgumentParser):
    """An argument error is one line (argparse prints the usage first), exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")


def _invalid(args) -> str | None:
    """Why the command cannot run, in one line, or None."""
    if args.sweep_dir is None and not args.index:
        return "give a sweep folder (e.g. sweeps/2026-11-30_12-00-00), or --index to rebuild reports/index.html"
    if args.sweep_dir is not None and not args.sweep_dir.is_dir():
        return f"sweep_dir={str(args.sweep_dir)!r} is not a folder"
    if args.sweeps is not None and not args.sweeps.is_dir():
        return f"--sweeps={str(args.sweeps)!r} is not a folder"
    if args.out.exists() and not args.out.is_dir():
        return f"--out={str(args.out)!r} is a file, not a folder"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(prog="python -m harness.report", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path, nargs="?",
                        help="a sweep folder, e.g. sweeps/2026-11-30_12-00-00 (optional with --index)")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="folder for the HTML (default: reports)")
    parser.add_argument("--index", action="store_true",
                        help="rebuild the folder's index.html, one row per sweep (every report also rebuilds it)")
    parser.add_argument("--sweeps", type=Path, default=None, metavar="DIR",
                        help="sweeps folder the index lists (default: the one beside --out: sweeps for reports)")
    args = parser.parse_args(argv)
    problem = _invalid(args)
    if problem:
        print(f"harness.report: error: {problem}", file=sys.stderr)
        return 2
    try:
        path = (write_report(args.sweep_dir, args.out, args.sweeps) if args.sweep_dir is not None
                else index.write_index(args.out, args.sweeps))
    except FileNotFoundError as err:
        print(f"harness.report: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk or a read-only folder
        print(f"harness.report: error: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
