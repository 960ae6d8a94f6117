"""A figure as a base64 PNG (`png`), and the child process that encodes the later half of a report's figures
beside the parent (harness.render.figures.rendered): `python -m harness.render.encode` reads the pickled Figures
its parent writes to its stdin (in memory, never a file) and writes their PNGs to stdout as a JSON list. A process
of its own, spawned, not forked: a child forked from a process that had loaded TensorFlow now and then crashed in
its garbage collection. It imports matplotlib alone."""
from __future__ import annotations

import base64
import io
import json
import pickle
import sys


def png(fig) -> str:
    """The figure as a base64 PNG, for an <img src="data:...">."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def main() -> int:
    figs = pickle.load(sys.stdin.buffer)  # the parent's own Figures, through a pipe
    json.dump([png(fig) for fig in figs], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
