"""A run's TensorBoard events read back, and checked against its metrics.parquet."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from harness.run.tensorboard_log import TAGS, scalars
from harness.store.layout import TB_DIR


@dataclass
class Board:
    """What TensorBoard reads from a run's tb/ folder: every value of every (tag, step), over all event files."""
    values: dict[str, dict[int, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    hparams: list[dict] = field(default_factory=list)  # one per session start written
    statuses: list[str] = field(default_factory=list)  # one per session end written

    def series(self, tag: str) -> dict[int, float]:
        """The tag's value at each step; fails on a step written twice."""
        doubled = {step: v for step, v in self.values[tag].items() if len(v) != 1}
        assert not doubled, f"{tag}: steps written more than once: {doubled}"
        return {step: v[0] for step, v in sorted(self.values[tag].items())}


def read_board(run_dir: Path) -> Board:
    from google.protobuf import json_format
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.plugins.hparams import api_pb2, metadata
    from tensorboard.util import tensor_util

    board = Board()
    files = sorted((run_dir / TB_DIR).glob("events.out.tfevents.*"))
    assert files, f"no event files in {run_dir / TB_DIR}"
    for path in files:
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                content = value.metadata.plugin_data.content
                if value.tag == metadata.SESSION_START_INFO_TAG:
                    start = metadata.parse_session_start_info_plugin_data(content)
                    board.hparams.append({k: json_format.MessageToDict(v) for k, v in start.hparams.items()})
                elif value.tag == metadata.SESSION_END_INFO_TAG:
                    end = metadata.parse_session_end_info_plugin_data(content)
                    board.statuses.append(api_pb2.Status.Name(end.status))
                else:
                    board.values[value.tag][event.step].append(tensor_util.make_ndarray(value.tensor).item())
    return board


def assert_board_matches_metrics(run_dir: Path) -> Board:
    """Each scalar holds, at step = epoch, the metrics row's value (as float32, TensorBoard's scalar type)."""
    board = read_board(run_dir)
    rows = pd.read_parquet(run_dir / "metrics.parquet").to_dict("records")
    expected = defaultdict(dict)
    for row in rows:
        for tag, value in scalars(row).items():
            expected[tag][row["epoch"]] = float(np.float32(value))
    assert set(board.values) == set(expected)
    for tag, by_epoch in expected.items():
        assert board.series(tag) == by_epoch, tag
    epochs = [row["epoch"] for row in rows]
    assert list(board.series(TAGS["val_acc"])) == epochs
    return board
