"""A sweep's summary, as its report embeds it at the top of its <head>: what the reports folder's index shows of the
sweep (harness.render.index), readable without assessing the sweep again. Also the report's file name and the digest
that tells a report older than its runs. Files only: no TensorFlow.
"""
from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import jinja2

from harness.store import layout
from harness.store.layout import RUN_FILE, SWEEP_FILE

SUMMARY_FORMAT = 1
SUMMARY_OPEN = '<script type="application/json" id="sweep-summary">'


def report_file_name(sweep_dir: Path) -> str:
    """`<sweep-id>-<8 hex digits>.html`: the sweep's name first, then a hash of its resolved folder, so that two
    sweeps of one name in different places never share a report."""
    resolved = Path(sweep_dir).resolve()
    return f"{resolved.name}-{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}.html"


def runs_digest(sweep_dir: Path) -> str:
    """A hash of the sweep's sweep.json and run.json files: it changes whenever a run starts, ends or resumes, so
    the index can tell a report older than its runs (robust to copying, unlike file times)."""
    digest = hashlib.sha1()
    run_files = [run_dir / RUN_FILE for run_dir in layout.run_dirs(sweep_dir)]
    for path in sorted([*Path(sweep_dir).glob(SWEEP_FILE), *run_files]):
        digest.update(str(path.relative_to(sweep_dir)).encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError as err:
            digest.update(repr(err).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def parse_time(text) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def earliest(started: list) -> str | None:
    """The earliest of the runs' started_at values (ISO strings), or None."""
    moments = [m for m in map(parse_time, (s for s in started if isinstance(s, str))) if m is not None]
    return min(moments).isoformat() if moments else None


def summary(sweep_dir: Path, *, started_at: str | None, counts: dict[str, int], varied: list[tuple[str, str]],
            verdicts: list, findings: list, generated_at: str, digest: str) -> dict:
    """What the index shows of a sweep, as its report embeds it: the batch-size verdicts, or the first finding
    when the sweep has none."""
    shown = verdicts or findings[:1]
    return {"format": SUMMARY_FORMAT, "sweep_id": Path(sweep_dir).resolve().name,
            "sweep_dir": str(Path(sweep_dir).resolve()), "started_at": started_at, "generated_at": generated_at,
            "counts": {str(k): int(n) for k, n in counts.items()}, "varied": [list(kv) for kv in varied],
            "verdicts": [{"subject": v.subject, "outcome": v.outcome, "headline": v.headline} for v in shown],
            "findings": len(findings) if verdicts else max(0, len(findings) - 1), "runs_digest": digest}


def embed_summary(summary: dict, html: str) -> str:
    """The report's HTML with its sweep's summary first in its <head>, where read_summary finds it; the JSON
    escapes <, > and & so that no value can close the script."""
    script = SUMMARY_OPEN + str(jinja2.utils.htmlsafe_json_dumps(summary)) + "</script>"
    return html.replace("<head>", f"<head>\n{script}", 1)


def read_summary(report: Path) -> dict | None:
    """The summary a report embeds, or None (a report from before summaries, a damaged or foreign file)."""
    try:
        with open(report, encoding="utf-8", errors="replace") as f:
            head = f.read(65536)
            if SUMMARY_OPEN in head and "</script>" not in head.split(SUMMARY_OPEN, 1)[1]:
                head += f.read()  # a summary longer than the first read
    except OSError:
        return None
    found = re.search(re.escape(SUMMARY_OPEN) + r"(.*?)</script>", head, flags=re.DOTALL)
    try:
        content = json.loads(found.group(1)) if found else None
    except ValueError:
        return None
    if not isinstance(content, dict) or content.get("format") != SUMMARY_FORMAT:
        return None
    if not isinstance(content.get("sweep_dir"), str):
        return None
    return content
