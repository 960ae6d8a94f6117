"""What a study costs in trainings: the run-seconds (run.json's `run_seconds`, set-up to end, summed over its runs) of
`+study=choose` on MNIST-1D and with `model.width=4` (a run whose epochs dominate its seconds) and `+study=recover`,
by round, on this tree's code and on the code of a git revision before it (a worktree first on the path:
benchmarks.matrix), each command run alone, the two codes in turn.

    python -m benchmarks.study_cost --before REV                 # the table, each command twice on each code
    python -m benchmarks.study_cost --before REV --update-docs   # also rewrite docs/studies.md's block
    python -m benchmarks.study_cost --smoke                      # tiny commands on this code, to check the script

choose's cost is also given in its own baseline runs (round 1: batch b as the command sets it, on every seed): the
median run-seconds over the mean of those runs, and by round, with what its timing costs: the rounds whose runs each
run as printed, alone, in a fresh process (the confirmation on the judging seeds and the check). Each row says what
the command answered, so that a cost is read beside the same answer. Nothing is asserted: the table says what it
finds.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import doc_blocks, matrix

# each case, named as its row shows it (the study, then what it adds to the study's first command): (study, overrides)
COMMANDS = {
    "choose": ("choose", ("batch_size=8,32,128,512",)),
    "choose model.width=4": ("choose", ("batch_size=8,32,128,512", "model.width=4")),  # the key: the row's command
    "recover": ("recover", ("batch_size=8,128", "epochs=5")),
}
SMOKE = {
    "choose": ("choose", ("batch_size=16,64", "dataset.num_samples=600", "epochs=2", "seed=0,1", "choose.lr_grid=[]")),
    "recover": ("recover", ("batch_size=16,64", "dataset.num_samples=600", "epochs=1", "seed=0,1", "recover.trials=2",
                            "recover.confirm=1", "recover.guided=2")),
}
TIMED = ("confirm", "check")  # choose's rounds whose runs each run as printed, alone, in a fresh process


PARTS = ("import", "training", "evaluation")  # run.json's `timings` a round's run-seconds are split into


def cost(sweep: Path) -> dict:
    """{runs, seconds, rounds {round: seconds}, baseline: the mean run-seconds of round 1's runs, epochs: the epochs
    its runs trained (a run continued from another's pause counts only its own), parts {round: {runs, and each of
    PARTS' seconds}}, stages: the study's name of each round (choose's), where its plan names them} of a sweep."""
    plan = json.loads((sweep / "sweep.json").read_text())
    rounds = {str(job["job"]): job.get("round", 1) for job in plan["jobs"]}
    by_round: dict[int, float] = {}
    parts: dict[int, dict[str, float]] = {}
    first, epochs = [], 0
    for path in sweep.glob("*/run.json"):
        record = json.loads(path.read_text())
        seconds = record.get("run_seconds") or 0.0
        epochs += (record.get("epochs_completed") or 0) - (record.get("resumed_from_epoch") or 0)
        number = rounds.get(path.parent.name, 1)
        by_round[number] = by_round.get(number, 0.0) + seconds
        part = parts.setdefault(number, {"runs": 0, **{name: 0.0 for name in PARTS}})
        part["runs"] += 1
        for name in PARTS:
            part[name] += (record.get("timings") or {}).get(name) or 0.0
        if number == 1:
            first.append(seconds)
    return {"runs": len(list(sweep.glob("*/run.json"))), "seconds": sum(by_round.values()), "epochs": epochs,
            "rounds": dict(sorted(by_round.items())), "baseline": statistics.mean(first) if first else None,
            "parts": dict(sorted(parts.items())), "stages": stage_names(plan)}


def stage_names(plan: dict) -> list[str]:
    """The study's name of each of its rounds, round 1 first ([] where its plan names none)."""
    if "choose" not in plan:
        return []
    from harness.studies.choose.settings import stages

    return list(stages(plan["choose"]))


def answer(study: str, sweep: Path) -> str:
    """What the command found, in a few words: choose's answer, recover's verdict and recipe trial."""
    if study == "choose":
        found = json.loads((sweep / "choice.json").read_text())
        a = found.get("answer")
        return "no answer" if a is None else f"batch {a['batch']}, {a['candidate']}"
    found = json.loads((sweep / "recovery.json").read_text())
    return f"{found.get('verdict') or 'no verdict'}, trial {found.get('recipe_trial')}"


def row(case: str, code: str, measured: list[dict], answers: list[str]) -> str:
    """The table's row of `case` (a key of COMMANDS: the study and what it adds to the study's first command)."""
    study = case.split()[0]
    seconds = [m["seconds"] for m in measured]
    median = statistics.median(seconds)
    rounds = " + ".join(f"{statistics.median(m['rounds'].get(r, 0.0) for m in measured):.0f}"
                        for r in sorted({r for m in measured for r in m["rounds"]}))
    base = statistics.median(m["baseline"] for m in measured) if study == "choose" else None
    times = "–" if base is None else f"{median / base:.1f}x ({base:.2f} s a run)"
    epochs = statistics.median(m["epochs"] for m in measured)
    return (f"| `+study={case}` | {code} | {measured[0]['runs']} | {epochs:.0f} | {median:.0f} s "
            f"({', '.join(f'{s:.0f}' for s in seconds)}) | {rounds} | {times} | {'; '.join(sorted(set(answers)))} |")


WHERE_HEADER = ("| round | runs | run-seconds | of which: importing Keras and its backend | training (the epochs in "
                "fit, its compile and the target's checks included) | evaluation (each epoch's measures) | x its "
                "baseline runs |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |")


def where_it_goes(measured: list[dict], case: str = "choose") -> str:
    """choose's run-seconds on this tree by round, split as run.json's `timings` split them (medians over the
    repeats), each also in its own baseline runs: what each round costs, how much of it is fixed (a fresh process's
    import) rather than training, and what the timing costs (the TIMED rounds)."""
    base = statistics.median(m["baseline"] for m in measured)
    stages = measured[0]["stages"]
    lines = [WHERE_HEADER]
    for number in sorted({r for m in measured for r in m["parts"]}):
        part = {key: statistics.median(m["parts"].get(number, {}).get(key, 0.0) for m in measured)
                for key in ("runs", *PARTS)}
        seconds = statistics.median(m["rounds"].get(number, 0.0) for m in measured)
        name = f"{number}. {stages[number - 1]}" if number <= len(stages) else str(number)
        lines.append(f"| {name} | {part['runs']:.0f} | {seconds:.1f} s | {part['import']:.1f} s | "
                     f"{part['training']:.1f} s | {part['evaluation']:.1f} s | {seconds / base:.1f}x |")
    training = statistics.median(sum(p["training"] for p in m["parts"].values()) for m in measured)
    first = statistics.median(m["parts"][1]["training"] / m["parts"][1]["runs"] for m in measured if 1 in m["parts"])
    text = (f"Where this tree's `+study={case}` goes, by round (medians over its runs of the command):\n\n"
            + "\n".join(lines) + f"\n\nIts training alone is {training / first:.1f}x the mean training of its "
            "baseline runs: the runs it needs, before any process starts or measures.")
    timed = [number for number, name in enumerate(stages, start=1)
             if name in TIMED and any(number in m["parts"] for m in measured)]
    if timed:
        def total(key: str) -> float:
            return statistics.median(sum(m["parts"].get(r, {}).get(key, 0.0) for r in timed) for m in measured)

        seconds = statistics.median(sum(m["rounds"].get(r, 0.0) for r in timed) for m in measured)
        text += (f" Its timing, the {' and '.join(stages[r - 1] for r in timed)} round{'s' if len(timed) > 1 else ''} "
                 f"({total('runs'):.0f} runs, "
                 f"each as printed, alone, in a fresh process), costs {seconds:.0f} s, {seconds / base:.1f}x its "
                 f"baseline runs, {total('import'):.0f} s of it importing Keras and its backend: what a time that "
                 "is the number the printed command records costs.")
    return text


HEADER = ("| command | code | runs | epochs trained | run-seconds: median (each run) | by round (medians) | choose: x "
          "its baseline runs (their mean) | what it answered |\n| --- | --- | ---: | ---: | ---: | --- | ---: | --- |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run each command on git revision REV's code")
    parser.add_argument("--repeats", type=int, default=2, help="each command this many times on each code")
    parser.add_argument("--smoke", action="store_true", help="tiny commands on this code, to check the script")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/studies.md")
    args = parser.parse_args(argv)
    commands = SMOKE if args.smoke else COMMANDS
    repeats = 1 if args.smoke else args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        codes = [("this tree", None)]
        if args.before and not args.smoke:
            codes.insert(0, (f"before ({args.before})", matrix.worktree(args.before, Path(tmp) / "before")))
        found: dict[tuple[str, str], tuple[list[dict], list[str]]] = {}
        for repeat in range(repeats):
            for number, (case, (study, overrides)) in enumerate(commands.items()):
                for label, code in codes:
                    folder = Path(tmp) / f"{number}-{study}-{label.split()[0]}-{repeat}"
                    folder.mkdir()
                    sweep, _ = matrix.run_study(study, case, overrides, folder, code)
                    measured, answers = found.setdefault((case, label), ([], []))
                    measured.append(cost(sweep))
                    answers.append(answer(study, sweep))
                    print(f"{case} {label} #{repeat}: {measured[-1]['seconds']:.0f} s, {answers[-1]}",
                          file=sys.stderr, flush=True)
        for label, code in codes:
            if code is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(code)], check=True)
    lines = [row(case, label, *found[(case, label)]) for case in commands for label, _ in codes]
    table = (f"{HEADER}\n" + "\n".join(lines) + "\n\nThe commands: " + "; ".join(
        f"`python -m harness +study={study} {' '.join(overrides)} -m`" for study, overrides in commands.values())
        + f". Each command alone, the two codes in turn, on {doc_blocks.machine()} with nothing else running.")
    for case, (study, _) in commands.items():
        if study == "choose" and (case, "this tree") in found:
            table += "\n\n" + where_it_goes(found[(case, "this tree")][0], case)
    print(table)
    if args.update_docs and not args.smoke:
        doc_blocks.replace_section("study-cost", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
