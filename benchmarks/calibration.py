"""Does a rerun of +study=choose's printed command land where its page says? For each case, the study is run as a
user runs it; then its answer's printed command and b's as it is (choice.json's `command` and `base_command`) are
run alone, as printed, on RERUNS seeds that neither chose nor judged (after the study's check seed), each in a
process of its own, one after another. Each rerun's recorded `seconds_to_target` is set beside its prediction and
the stated 95% prediction interval (choice.json's `sizes[].prediction`), and the geometric mean of the reruns'
speed-ups (b's over the answer's, paired by seed) beside the headline's interval.

    python -m benchmarks.calibration                 # the table: three cases, 18 reruns
    python -m benchmarks.calibration --update-docs   # also rewrite docs/studies.md's block
    python -m benchmarks.calibration --smoke         # one tiny case, one rerun each, to check the script

Nothing is asserted: the table says what it finds. Run it with nothing else on the machine: a time is measured
alone.
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import doc_blocks, matrix

CASES = {
    "MNIST-1D": ("batch_size=8,32,128,512",),
    "digits, MLP, SGD momentum": ("dataset=digits", "model=mlp", "optimizer=momentum", "lr=0.01",
                                  "batch_size=8,32,128,512"),
    "MNIST-1D, model.width=4": ("batch_size=8,32,128,512", "model.width=4"),
}
SMOKE = {"smoke": ("batch_size=16,64", "dataset.num_samples=600", "epochs=2", "seed=0,1,2", "choose.lr_grid=[]",
                   "choose.rules=[linear]", "choose.ramp=false")}
RERUNS = 3


def rerun(command: str, seed: int, folder: Path) -> float | None:
    """The printed command with `seed=`, alone, in a process of its own: the seconds_to_target its run.json
    records (None: it missed the target, or failed)."""
    run_dir = folder / f"seed-{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    args = shlex.split(command)[3:]  # after "python -m harness"
    subprocess.run([sys.executable, "-m", "harness", *args, f"seed={seed}", f"hydra.run.dir={run_dir}"],
                   cwd=folder, capture_output=True, text=True, check=False)
    try:
        return json.loads((run_dir / "run.json").read_text()).get("seconds_to_target")
    except (OSError, ValueError):
        return None


def measure(name: str, overrides: tuple[str, ...], folder: Path, reruns: int) -> dict:
    """One case: the study's answer and its predictions (choice.json), and each rerun of the two printed commands."""
    sweep, _ = matrix.run_study("choose", name, overrides, folder)
    chosen = json.loads((sweep / "choice.json").read_text())
    answer = chosen["answer"]
    plan = json.loads((sweep / "sweep.json").read_text())["choose"]
    first = int(plan.get("check_seed", max(plan["seeds"]) + 1)) + 1
    predictions = {(t["batch"], t["candidate"]): t["prediction"] for t in chosen["sizes"]}
    base = (plan["small_batch"], "as_is")
    found = {"case": name, "headline": chosen["headline"], "speedup": answer["speedup"], "runs": []}
    for which, command, key in (("answer", answer["command"], (answer["batch"], answer["candidate"])),
                                ("b as it is", answer["base_command"], base)):
        if which == "b as it is" and key == (answer["batch"], answer["candidate"]):
            continue  # the answer is b as it is: its reruns are the answer's
        for seed in range(first, first + reruns):
            seconds = rerun(command, seed, folder / which.replace(" ", "-"))
            found["runs"].append({"which": which, "seed": seed, "seconds": seconds, **predictions[key]})
            print(f"{name}: {which} seed {seed}: {seconds} s (predicted {predictions[key].get('center')})",
                  file=sys.stderr, flush=True)
    return found


def _s(value: float | None) -> str:
    return "missed" if value is None else f"{value:.3g}"


def table(cases: list[dict]) -> str:
    """The reruns beside their predictions, the share inside the stated intervals, and each case's rerun speed-up
    against its headline's interval."""
    rows, inside, total = [], 0, 0
    for case in cases:
        for run in case["runs"]:
            low, high, center = run.get("low"), run.get("high"), run.get("center")
            landed = run["seconds"] is not None and low is not None and low <= run["seconds"] <= high
            total += 1
            inside += landed
            off = "" if run["seconds"] is None or not center else f"{run['seconds'] / center - 1:+.0%}"
            band = "no interval" if low is None else f"[{low:.3g}, {high:.3g}]"
            rows.append(f"| {case['case']} | {run['which']} | {run['seed']} | {_s(run['seconds'])} | "
                        f"{_s(center)} | {off} | {band} | {'yes' if landed else 'no'} |")
    lines = ["| case | command | seed | recorded s | predicted s | off | 95% prediction interval | inside |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |", *rows, "",
             f"**{inside} of {total} reruns** landed inside their stated 95% prediction interval.", "",
             "| case | reruns' speed-up (geometric mean, paired by seed) | the headline's | its interval | inside |",
             "| --- | --- | --- | --- | --- |"]
    for case in cases:
        answer = [r["seconds"] for r in case["runs"] if r["which"] == "answer"]
        base = [r["seconds"] for r in case["runs"] if r["which"] == "b as it is"]
        speed = case["speedup"]
        pairs = [b / a for a, b in zip(answer, base) if a and b]
        mean = math.exp(sum(math.log(p) for p in pairs) / len(pairs)) if pairs and len(pairs) == len(answer) else None
        low, high = speed.get("low"), speed.get("high")
        said = "the answer is b" if not base else "a rerun missed" if mean is None else f"{mean:.2g}x"
        landed = mean is not None and low is not None and low <= mean <= high
        rows_band = "–" if low is None else f"[{low:.2g}, {high:.2g}] ({speed.get('n')} seeds)"
        value = "–" if speed.get("value") is None else f"{speed['value']:.2g}x"
        lines.append(f"| {case['case']} | {said} | {value} | {rows_band} | "
                     f"{'yes' if landed else 'no' if base else '–'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one tiny case, one rerun each, to check the script")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/studies.md")
    args = parser.parse_args(argv)
    cases, reruns = (SMOKE, 1) if args.smoke else (CASES, RERUNS)
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, (name, overrides) in enumerate(cases.items()):
            folder = Path(tmp) / f"case-{number}"
            folder.mkdir()
            found.append(measure(name, overrides, folder, reruns))
    text = table(found) + "\n\nThe commands: " + "; ".join(
        f"`python -m harness +study=choose {' '.join(overrides)} -m`" for overrides in cases.values()) + (
        f". Each study, then each rerun, alone on {doc_blocks.machine()} with nothing else running.")
    print(text)
    if args.update_docs and not args.smoke:
        doc_blocks.replace_section("calibration", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
