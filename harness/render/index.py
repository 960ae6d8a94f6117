"""The reports folder's table of contents, `reports/index.html`: one row per sweep, newest first.

Which sweeps: every report in the reports folder (each report carries a short summary of its sweep at the top
of its <head>, so a reports folder moved or zipped without its sweeps still gets its index) and every folder in
the sweeps folder beside it (`reports/../sweeps`, or `python -m harness.report --index --sweeps DIR`), reported
or not. Sweeps are told apart by their resolved folder: two sweeps of one name in different places are two rows.

Cheap by design: a row comes from its report's summary (a few KB read from the top of the file) and the sweep's
run.json files, never from assessing the sweep again. Assessing takes about 0.7 s for a sweep of nine runs, so an
index that re-assessed 20 sweeps would add some 14 s to the end of every multirun; from the summaries the same
index takes well under a second. Files only: no TensorFlow.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from harness.render import pages
from harness.render.summary import earliest, parse_time, read_summary, report_file_name, runs_digest
from harness.store import command_file, files, layout
from harness.store.layout import INDEX_FILE, LATEST_FILE, RUN_FILE, SWEEP_FILE
from harness.store.run_files import config_columns, record_config

STATUS_ORDER = ("completed", "diverged", "paused", "failed", "interrupted", "running", "damaged", "not started")
SHOWN_VERDICTS = 3  # a sweep with more facets than this says how many more its report holds

NO_REPORT = "No report yet: python -m harness.report {path}"
STALE = "Its runs changed after this report was built: python -m harness.report {path} brings it up to date."
NO_SUMMARY = ("This report carries no summary of its sweep (built by an older harness, or damaged); "
              "python -m harness.report {path} rebuilds it.")
ORPHAN = ("This report carries no summary of its sweep (built by an older harness, or damaged), and its sweep is "
          "not in the sweeps folder; python -m harness.report SWEEP_FOLDER rebuilds it.")
EMPTY = "Empty: no run has been recorded in this folder (no run.json, no sweep.json)."
DAMAGED = "{n} run(s) damaged: their run.json cannot be read; {resume} runs them again."


def default_sweeps_dir(reports_dir: Path) -> Path:
    """The sweeps folder beside a reports folder: `sweeps` for `reports`, as the harness writes them."""
    return Path(reports_dir).parent / "sweeps"


@dataclass
class Row:
    """One sweep in the index."""

    sweep_id: str
    location: str                # the sweep's folder, relative to the working folder when inside it
    started: datetime | None
    runs: list[tuple[str, int]]  # (status, count) in STATUS_ORDER
    varied: list[tuple[str, str]]
    verdicts: list[dict]         # subject ("" when it says nothing), outcome, headline
    more_verdicts: int = 0       # verdicts the row leaves to the report
    findings: int = 0            # findings on the other suspects the row leaves to the report
    report: str | None = None    # the report's file name: a link relative to the index
    notes: list[str] = field(default_factory=list)

    @property
    def date(self) -> str:
        return self.started.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M") if self.started else "–"


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _folder_time(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(Path(path).stat().st_mtime, timezone.utc)
    except OSError:
        return None


def _ordered_counts(counts: dict[str, int]) -> list[tuple[str, int]]:
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    return sorted(((s, n) for s, n in counts.items() if n), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def _verdict_lines(verdicts: list[dict]) -> tuple[list[dict], int]:
    lines = [{"subject": "" if v.get("subject") == "all runs" else str(v.get("subject", "")),
              "outcome": str(v.get("outcome", "")), "headline": str(v.get("headline", ""))} for v in verdicts]
    return lines[:SHOWN_VERDICTS], max(0, len(lines) - SHOWN_VERDICTS)


def _row_from_summary(found: dict, report: Path) -> Row:
    sweep_dir = Path(found["sweep_dir"])
    verdicts, more = _verdict_lines(found.get("verdicts") or [])
    row = Row(str(found.get("sweep_id", sweep_dir.name)), _shown(sweep_dir),
              parse_time(found.get("started_at")) or _folder_time(sweep_dir) or _folder_time(report),
              _ordered_counts(found.get("counts") or {}), [tuple(kv) for kv in found.get("varied") or []],
              verdicts, more, int(found.get("findings") or 0), report.name)
    if sweep_dir.is_dir() and runs_digest(sweep_dir) != found.get("runs_digest"):
        row.notes.append(STALE.format(path=row.location))
    return row


def _row_from_files(sweep_dir: Path) -> Row:
    """A row from the sweep's run.json and sweep.json alone (no metrics read): for a sweep without a report."""
    row = Row(sweep_dir.name, _shown(sweep_dir), None, [], [], [])
    counts, configs, started, ran = Counter(), [], [], set()
    try:
        for run_dir in layout.run_dirs(sweep_dir):
            try:
                record = files.read_json(run_dir / RUN_FILE) or {}
            except files.DamagedFile:
                counts["damaged"] += 1
                continue
            counts[str(record.get("status", "damaged"))] += 1
            configs.append(config_columns(record_config(record)))
            started.append(record.get("started_at"))
            ran.add(tuple(record.get("overrides") or []))
        try:
            jobs = (files.read_json(sweep_dir / SWEEP_FILE) or {}).get("jobs", [])
            missing = sum(tuple(job.get("overrides", [])) not in ran for job in jobs)
            counts["not started"] += max(0, missing - counts["damaged"])  # a damaged run.json hides its overrides
        except (files.DamagedFile, AttributeError, TypeError) as err:
            row.notes.append(f"{SWEEP_FILE} cannot be read: {err}")
    except OSError as err:
        row.notes.append(f"Cannot be read: {err}")
    keys = list(dict.fromkeys(k for cfg in configs for k in cfg))
    row.varied = [(k, pages.listed([cfg.get(k) for cfg in configs])) for k in keys
                  if len({str(cfg.get(k)) for cfg in configs}) > 1]
    row.runs = _ordered_counts(counts)
    row.started = parse_time(earliest(started)) or _folder_time(sweep_dir)
    if counts["damaged"]:
        row.notes.append(DAMAGED.format(n=counts["damaged"], resume=command_file.resume_hint(sweep_dir)))
    if not row.runs and not row.notes:
        row.notes.append(EMPTY)
    return row


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:  # no such folder (a reports folder on its own), or one this user cannot read
        return []


def sweep_folders(sweeps_dir: Path, depth: int = 3) -> list[Path]:
    """The sweeps in a sweeps folder: its sub-folders, and those of sub-folders that only group sweeps (e.g.
    hydra.sweep.dir=sweeps/<project>/<time>), `depth` levels down. A folder holding neither a sweep nor sweeps
    is listed too, so that the index says it is empty."""
    found = []
    for folder in _subfolders(sweeps_dir):
        inner = [] if depth <= 1 or layout.is_sweep(folder) else sweep_folders(folder, depth - 1)
        found += inner or [folder]
    return found


def _reports(reports_dir: Path) -> dict[str, tuple[Path, dict | None]]:
    """The reports folder's reports by their sweep's resolved folder (`file:<name>` for one without a summary);
    of two reports of one sweep (a copy), the newer."""
    def written(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    found: dict[str, tuple[Path, dict | None]] = {}
    for report in sorted(Path(reports_dir).glob("*.html"), key=written):
        if report.name not in (INDEX_FILE, LATEST_FILE):
            content = read_summary(report)
            found[content["sweep_dir"] if content else f"file:{report.name}"] = (report, content)
    return found


def _folder_row(folder: Path, reported: dict[str, tuple[Path, dict | None]]) -> Row:
    """The row of a sweep folder without a readable summary; takes its report, if any, out of `reported`."""
    try:
        row = _row_from_files(folder)
    except (TypeError, ValueError, AttributeError) as err:  # a run.json of an unexpected shape
        row = Row(folder.name, _shown(folder), _folder_time(folder), [], [], [], notes=[f"Cannot be read: {err}"])
    # its report, if it has one: unreadable, or from before summaries (then named <sweep-id>.html)
    named = reported.pop(f"file:{report_file_name(folder)}", None) or reported.pop(f"file:{folder.name}.html", None)
    if named:
        row.report = named[0].name
        row.notes.append(NO_SUMMARY.format(path=row.location))
    elif row.runs:
        row.notes.append(NO_REPORT.format(path=row.location))
    return row


def rows(reports_dir: Path, sweeps_dir: Path | None = None) -> list[Row]:
    """Every sweep of the reports folder and of the sweeps folder, newest first."""
    sweeps_dir = default_sweeps_dir(reports_dir) if sweeps_dir is None else Path(sweeps_dir)
    reported = _reports(reports_dir)
    folders = sweep_folders(sweeps_dir)
    result = [_folder_row(folder, reported) for folder in folders if str(folder.resolve()) not in reported]
    for report, found in reported.values():
        orphan = Row(report.stem, "–", _folder_time(report), [], [], [], report=report.name, notes=[ORPHAN])
        try:
            result.append(orphan if found is None else _row_from_summary(found, report))
        except (TypeError, ValueError, AttributeError, KeyError, OSError):  # a summary of an unexpected shape
            result.append(orphan)
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    return sorted(result, key=lambda r: (r.started or oldest, r.sweep_id), reverse=True)


def build_index(reports_dir: Path, sweeps_dir: Path | None = None) -> str:
    """The index page's HTML."""
    template = pages.template("index.html.j2")
    sweeps_dir = default_sweeps_dir(reports_dir) if sweeps_dir is None else Path(sweeps_dir)
    return template.render(rows=rows(reports_dir, sweeps_dir), sweeps_dir=_shown(sweeps_dir),
                           generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), quote=quote)


def write_index(reports_dir: Path, sweeps_dir: Path | None = None) -> Path:
    """Write reports/index.html; return its path."""
    target = Path(reports_dir) / INDEX_FILE
    files.write_text(target, build_index(reports_dir, sweeps_dir))
    return target
