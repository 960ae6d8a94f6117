"""Layout defects of a matplotlib Figure, measured with matplotlib's own renderer (Agg): text outside the figure,
two text elements overlapping, a legend over a plotting area."""
from __future__ import annotations

from itertools import combinations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend import Legend
from matplotlib.text import Text


def _tick_labels(axis) -> list[Text]:
    """Labels of the ticks drawn: those inside the view interval (others exist but are not drawn)."""
    low, high = sorted(axis.get_view_interval())
    labels = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        if low - 1e-9 * abs(high - low) <= tick.get_loc() <= high + 1e-9 * abs(high - low):
            labels += [label for label in (tick.label1, tick.label2) if label.get_visible()]
    return labels


def _texts(fig) -> list[tuple[str, Text]]:
    """Every drawn, non-empty text element: titles, axis labels, tick labels, legend entries, annotations."""
    texts: list[Text] = list(fig.texts)
    for legend in fig.legends:
        texts += legend.get_texts()
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        texts += _tick_labels(ax.xaxis) + _tick_labels(ax.yaxis)
        if ax.get_legend() is not None:
            texts += ax.get_legend().get_texts()
    return [(t.get_text().replace("\n", " "), t) for t in texts if t.get_visible() and t.get_text().strip()]


def problems(fig) -> list[str]:
    """A list of what is wrong with the figure's layout; empty when every text is inside and apart."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    frame = fig.bbox
    found = []
    boxes = []
    for text, artist in _texts(fig):
        box = artist.get_window_extent(renderer)
        if box.width == 0 or box.height == 0:
            continue
        if box.x0 < frame.x0 - 1 or box.y0 < frame.y0 - 1 or box.x1 > frame.x1 + 1 or box.y1 > frame.y1 + 1:
            found.append(f"text {text!r} is cut at the figure's edge ({box} outside {frame})")
        boxes.append((text, box))
    for (a, box_a), (b, box_b) in combinations(boxes, 2):
        overlap_w = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        overlap_h = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if overlap_w > 1 and overlap_h > 1:
            found.append(f"texts {a!r} and {b!r} overlap")
    for legend in fig.findobj(Legend):
        if not legend.get_visible():
            continue
        legend_box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            area = ax.get_window_extent(renderer)  # the plotting area (the axes' patch)
            if (min(legend_box.x1, area.x1) - max(legend_box.x0, area.x0) > 1
                    and min(legend_box.y1, area.y1) - max(legend_box.y0, area.y0) > 1):
                found.append(f"a legend ({', '.join(t.get_text() for t in legend.get_texts())[:60]}) covers a "
                             f"plotting area ({ax.get_title()!r})")
    return found
