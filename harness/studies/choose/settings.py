"""+study=choose's settings (`choose.*`: not run config): validated from the composed config at planning
(`from_dict`), recorded in sweep.json's `choose.settings` and read back from there into the same dataclass
(`recorded`) by the later rounds and the reading; and the names of its arms and stages. Plain data and checks."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.fields import ConfigError, check_keys

RULES = ("linear", "sqrt", "adam_sde", "precise_bn")  # the published rules (harness.config.rules)
CAP = 3  # max_epochs null: this many times the command's epochs
BEFORE: dict[str, Any] = {"ramp": False, "race_margin": None, "cap_factor": None,
                          "time_epochs": None, "timing": "line", "ramp_min_gain": 0.0}  # what a key an older
# sweep.json lacks meant: no ramp candidates, no race, no cap but max_epochs, times read off a line (timing.py), a
# proposal for any predicted gain
# the arms: b as the command sets it (the baseline), and each candidate at each batch size
AS_IS = "as_is"
BASELINE = "baseline"
STAGES = (BASELINE, "candidates", "grid", "confirm", "check")  # choose.timing measured: the confirmation is the
# timing, each judging seed's run of the printed command alone, and the check reruns it on a seed of its own
LINE_STAGES = (BASELINE, "candidates", "grid", "confirm", "time", "check")  # an older sweep's (timing "line")
TIMINGS = ("measured",)  # choose.timing a command may set; "line" is what an older sweep.json's lack of it means
TIME, CHECK = "time_", "check_"  # the arms of those runs: time_bs128_linear, check_bs8_as_is
RAMPS = ("ramp", "smith", "seesaw")  # candidates whose batch grows: the proposal from the curves, Smith's rule and
# Seesaw; each its own arm at its first phase's batch (bs8_ramp), never a batch size's best
TIMED_RUNS = 2  # the timing round runs each best in the printed command's shape on this many seeds that judge
COMMAND_SHAPE = {"target_check": "epoch"}  # what a timed run sets beside its recipe: checked once an epoch
RACED_OUT = "raced_out"  # a candidate's status on a seed where it passed its batch size's leader by race_margin


def arm(size: int, name: str) -> str:
    """A candidate's arm: `bs<size>_<name>` (bs128_linear; its grid's bs128_linear_x2)."""
    return f"bs{size}_{name}"


def size_name(name: Any) -> tuple[int | None, str]:
    """An arm's batch size and candidate, the inverse of `arm`: bs128_linear_x2 -> (128, "linear_x2")."""
    if not isinstance(name, str) or not name.startswith("bs"):
        return None, ""
    size, _, rest = name[2:].partition("_")
    return (int(size), rest) if size.isdigit() else (None, "")


def stages(record: dict[str, Any]) -> tuple[str, ...]:
    """The stages a sweep goes through, round 1 first (no baseline with choose.target given; no check with
    choose.check false)."""
    settings = recorded(record)
    every = STAGES if settings.timing == "measured" else LINE_STAGES
    found = every if record["target"] is None else every[1:]
    return found if settings.check else found[:-1]


@dataclass(frozen=True)
class Settings:
    """`choose.*`: the target, the cap of every target run, the candidates and the timing (not run config)."""

    target: float | None = None   # the tuning accuracy to reach; None: b's lowest final tune_acc less `tolerance`
    tolerance: float = 0.01       # below b's accuracy a target (or a recommendation's validation) may be
    tune_fraction: float = 0.1    # held out of the training split in every run: the target is read on it
    max_epochs: float | None = None  # the cap of every run stopped at the target; None: CAP x the command's
    rules: tuple[str, ...] = RULES   # the published rules, each batch size's first candidates beside the command
    lr_grid: tuple[float, ...] = (0.5, 2.0)  # x the best candidate's learning rate, at every batch size
    check: bool = True            # rerun the answer and b as it is, alone, and compare their times with the predicted
    check_tolerance: float = 0.25  # a check further than this from its prediction (relative) makes the time uncertain
    timing: str = "measured"      # a judging seed's time is its own run of the printed command, alone (older sweeps:
    # "line", a time read off the line C + r x S through two timed runs)
    ramp: bool = True             # also confirm and time a batch schedule: the ramp proposed from the curves, Smith's
    # rule's and Seesaw's
    ramp_min_gain: float = 0.1    # a proposal from the curves runs only where it is predicted this much faster
    # (relative) than the fastest single batch size, both predicted from the same curves
    race_margin: float | None = 0.25  # a grid point stops once its samples pass its batch size's leader's (from the
    # round before, on the seed that chooses) by this much (relative); None: no race
    time_epochs: int | None = None  # an older sweep's (timing "line"): its timed runs of one batch size stopped after
    # this many checks (epochs), the line's first (C) and three after it (r); None: at the target
    cap_factor: float | None = 4.0   # a target run (not b as it is, not a timed one) stops without the target after
    # this many times the training samples b needed on its slowest baseline seed; None: choose.max_epochs only

    def cap(self, epochs: int) -> int:
        """The epochs every target run may take at most (the command's `epochs` E)."""
        return math.ceil(self.max_epochs) if self.max_epochs is not None else CAP * epochs


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def from_dict(node: dict[str, Any]) -> Settings:
    """The `choose` node of a composed config, validated; raises ConfigError naming `choose.<key>`."""
    check_keys(node, set(Settings.__dataclass_fields__), "choose.")
    target = node.get("target")
    if target is not None and (not _number(target) or not 0 < target < 1):
        raise ConfigError("choose.target", target, "a tuning accuracy in (chance, 1), or null for the smallest "
                          "batch's own less choose.tolerance")
    tolerance = node.get("tolerance", 0.01)
    if not _number(tolerance) or not 0 <= tolerance < 1:
        raise ConfigError("choose.tolerance", tolerance, "a number in [0, 1)")
    fraction = node.get("tune_fraction", 0.1)
    if not _number(fraction) or not 0 < fraction < 1:
        raise ConfigError("choose.tune_fraction", fraction, "a number in (0, 1): every run holds out the tuning "
                          "slice the target is read on")
    cap = node.get("max_epochs")
    if cap is not None and (not _number(cap) or cap < 1):
        raise ConfigError("choose.max_epochs", cap, f"a number of epochs >= 1 (the cap of every run stopped at the "
                          f"target), or null for {CAP}x the command's epochs")
    named = node.get("rules", list(RULES))
    if not isinstance(named, (list, tuple)) or any(name not in RULES for name in named) \
            or len(set(named)) != len(named):
        raise ConfigError("choose.rules", named, f"a list of distinct rules among {', '.join(RULES)} ([] for none: "
                          "the command and its learning-rate grid only)")
    grid = node.get("lr_grid", [0.5, 2.0])
    if not isinstance(grid, (list, tuple)) or len(grid) > 4 or any(not _number(f) or f <= 0 or f == 1 for f in grid):
        raise ConfigError("choose.lr_grid", grid, "a list of at most 4 factors > 0 other than 1 (x the best "
                          "candidate's learning rate; [] for none)")
    if not isinstance(node.get("check", True), bool):
        raise ConfigError("choose.check", node["check"], "true or false")
    allowed = node.get("check_tolerance", 0.25)
    if not _number(allowed) or not 0 < allowed < 1:
        raise ConfigError("choose.check_tolerance", allowed, "a number in (0, 1): how far (relative) a rerun's time "
                          "may lie from its prediction before the page calls the time uncertain")
    if node.get("timing", "measured") not in TIMINGS:
        raise ConfigError("choose.timing", node["timing"], "measured (each seed's time is its own run of the printed "
                          "command, alone; older sweeps read as they were planned)")
    if not isinstance(node.get("ramp", True), bool):
        raise ConfigError("choose.ramp", node["ramp"], "true or false")
    gain = node.get("ramp_min_gain", 0.1)
    if not _number(gain) or not 0 <= gain < 1:
        raise ConfigError("choose.ramp_min_gain", gain, "a number in [0, 1): how much faster (relative) than the "
                          "fastest single batch size a proposed ramp must be predicted, to be run")
    if "time_epochs" in node:
        raise ConfigError("choose.time_epochs", node["time_epochs"], "left out: each seed's time is now its own run "
                          "of the printed command to the target (the key was an older sweep's line, read as it was)")
    margin = node.get("race_margin", 0.25)
    if margin is not None and (not _number(margin) or margin < 0):
        raise ConfigError("choose.race_margin", margin, "a number >= 0 (a grid point stops once its samples pass its "
                          "batch size's leader's by this much, relative), or null for no race")
    factor = node.get("cap_factor", 4.0)
    if factor is not None and (not _number(factor) or factor < 1):
        raise ConfigError("choose.cap_factor", factor, "a number >= 1 (x the training samples batch b needed to reach "
                          "the target: where a run that has not stops), or null for choose.max_epochs only")
    return Settings(**{**node, "rules": tuple(named), "lr_grid": tuple(float(f) for f in grid)})


def recorded(record: dict[str, Any]) -> Settings:
    """The settings sweep.json's `choose` record holds, in their dataclass (a key it lacks: BEFORE's, else the
    default)."""
    saved = {key: value for key, value in record.get("settings", {}).items() if key in Settings.__dataclass_fields__}
    values = {**BEFORE, **saved}
    return Settings(**{**values, "rules": tuple(values.get("rules", RULES)),
                       "lr_grid": tuple(values.get("lr_grid", (0.5, 2.0)))})


def point_jobs(record: dict[str, Any]) -> dict[tuple[int, int], list[str]]:
    """(size, seed) -> the command's own job there, as round 1 recorded it."""
    return {(int(size), int(seed)): list(job) for size, seeds in record["points"].items()
            for seed, job in seeds.items()}
