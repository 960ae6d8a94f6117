"""Hydra's half of the command line: compose the config, expand a sweep into its jobs, validate each into a
RunConfig, and fold Hydra's messages into one line. The module of harness.config that imports hydra and omegaconf
(with harness.config.hydra_internals, Hydra's private API; the launch wing's command line and the plugins are the
others).
"""
from __future__ import annotations

import copy
import functools
import re
import textwrap
from pathlib import Path
from typing import Any, Callable, NamedTuple

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import MissingConfigException, OverrideParseException
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from harness.config import hydra_internals, recipe, schema
from harness.config.overrides import check_batch_size
from harness.store import layout

# installed with the package; the repository links conf/ to it
CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
CONFIG_NAME = "config"


# Where runs are tracked (tracking=mlflow's `tracking.*`) and a study's own settings (`<study>.*`, the node its
# preset names after itself: +study=recover's `recover.*`): they plan a sweep's jobs and tell a run what to do
# beside training, but they are no run's config (not in RunConfig.flat(), so resuming compares runs without them).
TRACKING_NODE = "tracking"


HELP_WIDTH, HELP_INDENT = 112, 50  # the --help text's width, and where its commands' descriptions start


def study_presets(searchpath: list[str] = ()) -> list[str]:
    """The study presets found (conf/study/*.yaml, and those of the user's --config-dir, in Hydra's search path)."""
    folders = [CONF_DIR / "study", *(Path(str(p).removeprefix("file://")) / "study" for p in searchpath or ()
                                     if str(p).startswith("file://"))]
    return sorted({path.stem for folder in folders if folder.is_dir() for path in folder.glob("*.yaml")})


def _presets_for_help(searchpath=None) -> str:
    """The presets as --help lists them (conf/config.yaml's header): wrapped under its descriptions' column."""
    first = "  python -m harness +study=causes -m              a named study (conf/study/: "
    lines = textwrap.wrap(", ".join(study_presets(searchpath)) + ")", width=HELP_WIDTH,
                          initial_indent=" " * len(first), subsequent_indent=" " * HELP_INDENT)
    return "\n".join([lines[0].lstrip(), *lines[1:]])[:-1]


OmegaConf.register_new_resolver("harness_presets", _presets_for_help, replace=True)


def chosen_study(cfg: DictConfig) -> str | None:
    """The study preset a composed config (with its hydra node) chose (+study=...), or None."""
    if "hydra" not in cfg:
        return None
    return OmegaConf.select(cfg, "hydra.runtime.choices.study", default=None)


def to_run_config(cfg: DictConfig | dict[str, Any], study: str | None = None) -> schema.RunConfig:
    """Validate a composed config (a Hydra config, its hydra node, the tracking node and the settings node of its
    study excluded, or job_composer's plain dict, of the study `study`) into a frozen RunConfig."""
    if isinstance(cfg, DictConfig):
        study = study or chosen_study(cfg)
        if "hydra" in cfg:
            cfg = cfg.copy()
            with open_dict(cfg):
                del cfg["hydra"]  # its run-time fields are not resolvable outside a job
        cfg = OmegaConf.to_container(cfg, resolve=True)
    beside = {TRACKING_NODE} | {key for key, value in cfg.items()
                                if isinstance(value, dict) and (key == study or _preset(key))}
    return schema.from_dict({key: value for key, value in cfg.items() if key not in beside})


def _preset(name: str) -> bool:
    """Whether `name` is a built-in study preset's (conf/study/<name>.yaml): a node of that name holds its settings,
    in a config composed without its hydra node (which says the study chosen)."""
    return (CONF_DIR / "study" / f"{name}.yaml").is_file()


def study_settings(cfg: DictConfig, node: str) -> dict[str, Any] | None:
    """A study's settings in a composed config, resolved, as a plain dict (None when the study is not on)."""
    value = cfg.get(node)
    return None if value is None else OmegaConf.to_container(value, resolve=True)


def recorded_run_config(run_dir: Path) -> schema.RunConfig:
    """A finished run's RunConfig, from the composed config Hydra saved in its folder (.hydra/config.yaml, its
    study's choice from .hydra/hydra.yaml); a run recorded before the `backend` key existed ran on TensorFlow, one
    before a recipe key with its default."""
    hydra_dir = Path(run_dir) / layout.HYDRA_DIR
    cfg = OmegaConf.load(hydra_dir / layout.HYDRA_CONFIG)
    with open_dict(cfg):
        if "backend" not in cfg:
            cfg.backend = "tensorflow"
        for key, default in {**recipe.RECIPE_DEFAULTS, "batch_schedule": None}.items():  # a run recorded before
            if key not in cfg:                                                         # the key: its default
                cfg[key] = default
    hydra_file = hydra_dir / "hydra.yaml"
    study = OmegaConf.select(OmegaConf.load(hydra_file), "hydra.runtime.choices.study", default=None) \
        if hydra_file.exists() else None
    return to_run_config(cfg, study)


def _allowed_keys(key: str) -> str:
    group, _, _ = key.rpartition(".")
    if key.split(".", 1)[0] == "hydra":
        return f"the keys of Hydra's own config under {group} (`python -m harness --cfg hydra` lists them)"
    keys = {"dataset": schema.DATA_KEYS, "model": schema.MODEL_KEYS}.get(group)
    if keys is None:
        return ", ".join(sorted(schema.TOP_KEYS)) + " (and dataset.*, model.* keys)"
    return ", ".join(f"{group}.{k}" for k in sorted(keys))


def one_line(err: BaseException, overrides: list[str]) -> str:
    """Hydra's multi-line messages folded into the one line the user sees, naming what is allowed."""
    text = str(err)
    unknown = re.search(r"Could not override '([^']+)'", text) or re.search(r"Key '([^']+)' is not in struct", text)
    if unknown:
        key = unknown.group(1)
        given = next((o for o in overrides if o.lstrip("+~").split("=", 1)[0] == key), key)
        return f"{given} is not allowed: unknown key; valid keys are {_allowed_keys(key)}"
    if isinstance(err, MissingConfigException):
        missing = re.search(r"Could not find '([^']+)/([^'/]+)'", text)
        if missing:
            options = re.findall(r"^\t(\S+)$", text.partition("Available options")[2], flags=re.MULTILINE)
            allowed = f"one of {', '.join(options)}" if options else "an existing config"
            return f"{missing.group(1)}={missing.group(2)} is not allowed: {allowed}"
    if isinstance(err, OverrideParseException):
        text = f"cannot parse override '{err.override}': {err.message}"
    merging = re.match(r"Error merging override (\S+)", text)
    if merging and err.__cause__ is not None:  # the cause says what is wrong with the value
        return f"{merging.group(1)} is not allowed: {str(err.__cause__).splitlines()[0]}"
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def quote_override(value: str) -> str:
    """A value quoted for a Hydra command-line override, whatever characters it holds.

    In a quoted value Hydra unescapes only backslashes that come before a quote (or the closing quote), so only
    those are doubled, and each quote is escaped.
    """
    escaped = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", value)
    escaped = re.sub(r"(\\+)$", lambda m: m.group(1) * 2, escaped)
    return f"'{escaped}'"


def expand_jobs(overrides: list[str], multirun: bool, config_name: str) -> tuple[list[list[str]], Path, DictConfig]:
    """The jobs the command's overrides and its sweeper params expand to (as Hydra's basic sweeper would), where
    they would write, and the command's config without its swept values (the launcher's, a study's settings);
    call inside an initialized config dir (compose_jobs)."""
    compose = hydra_internals.compose
    parser = OverridesParser.create()
    parsed = parser.parse_overrides(overrides)
    task = [o.input_line for o in parsed if not o.is_hydra_override()]  # what a job's run records
    fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
    base = compose(config_name, overrides=fixed if multirun else overrides, return_hydra_config=True)
    if not multirun:
        return [task], Path(str(base.hydra.run.dir)), base
    params = base.hydra.sweeper.get("params")
    params = OmegaConf.to_container(params, resolve=False) if params else {}
    arguments = [f"{key}={value}" for key, value in params.items()] + task
    jobs = hydra_internals.split_sweep(parser.parse_overrides(arguments))
    return jobs, Path(str(base.hydra.sweep.dir)), base


class ComposedCommand(NamedTuple):
    jobs: list[list[str]]               # each job's overrides, a study's computed jobs included
    output_dir: Path                    # where the command writes
    launcher: DictConfig                # hydra.launcher, the launcher's config
    run_configs: list[schema.RunConfig]
    study: dict[str, Any]               # what the study planned for sweep.json
    tracking: dict[str, Any] | None     # the `tracking` node, or None
    study_name: str | None              # the study preset named (+study=...), or None


def compose_jobs(overrides: list[str], multirun: bool, config_name: str = CONFIG_NAME,
                 find_study: Callable[[str | None], Any] = lambda name: None) -> ComposedCommand:
    """Every job of the command composed and validated, with the jobs its study computes from them (`find_study`:
    the study the preset names, harness.studies.registry.find, whose `check_command`, `settings` and `plan` a
    multirun calls); raises ConfigError or a Hydra error on the first bad one."""
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=hydra_internals.VERSION_BASE, job_name="harness"):
        jobs, output_dir, base = expand_jobs(overrides, multirun, config_name)
        name = chosen_study(base)
        parsed = OverridesParser.create().parse_overrides(overrides)
        hydra_overrides = [o.input_line for o in parsed if o.is_hydra_override()]  # e.g. where configs are found
        composed = job_composer(config_name, hydra_overrides)
        run_configs = [to_run_config(composed(job), name) for job in jobs]
        for job, run_config in zip(jobs, run_configs):
            check_batch_size(job, run_config.train.batch_schedule)
        planned: dict[str, Any] = {}
        given = {o.key_or_group: o.input_line for o in parsed if not o.is_hydra_override()}
        study = find_study(name)
        if multirun and study is not None:  # the study's own jobs, from the command's (a diagnosis's arms, ...)
            study.check_command(given)
            found = study.plan(jobs, run_configs, study.settings(study_settings(base, name)), given)
            if found is not None:
                jobs, planned = found
                run_configs = [to_run_config(composed(job), name) for job in jobs]
    return ComposedCommand(jobs, output_dir, base.hydra.launcher, run_configs, planned,
                           study_settings(base, TRACKING_NODE), name)


_ABSENT = object()


def _plain(override: Override, base: DictConfig) -> bool:
    """A `key=value` that sets an existing single value (not a config group, a list or a whole node): Hydra
    applies it after composing, as OmegaConf.update(cfg, key, value, merge=True), so it can be applied to a
    config composed without it."""
    if override.type != OverrideType.CHANGE or override.package is not None or override.is_hydra_override():
        return False
    if isinstance(override.value(), (list, dict)):
        return False
    node = OmegaConf.select(base, override.key_or_group, default=_ABSENT, throw_on_missing=False)
    return node is not _ABSENT and not isinstance(node, (DictConfig, ListConfig))


def job_composer(config_name: str, hydra_overrides: list[str]) -> Callable[[list[str]], dict[str, Any]]:
    """The composed config of many jobs of one sweep (as compose(config_name, hydra_overrides + job) gives it, as a
    plain, resolved dict without the hydra node), at about 0.1 ms a job: Hydra composes each distinct set of the
    jobs' structural overrides (config groups, additions, deletions) once, each distinct override is parsed once,
    and every job's plain `key=value` overrides are set in a copy of its structure's plain dict, as Hydra applies
    them (_plain). A structure whose values interpolate others (`${...}`) is copied and updated as a DictConfig,
    then resolved; an override the config lacks goes to Hydra whole, for its own error. Call inside an
    initialized config dir."""
    compose = hydra_internals.compose
    parse = functools.lru_cache(maxsize=None)(OverridesParser.create().parse_override)
    default = compose(config_name, overrides=list(hydra_overrides))  # which keys hold a single value
    structures: dict[tuple[str, ...], tuple[DictConfig, dict | None]] = {}
    plain_in: dict[tuple[tuple[str, ...], str], bool] = {}

    def compose_job(job: list[str]) -> dict[str, Any]:
        parsed = [parse(line) for line in job]
        # a config group (dataset=digits) and a key only a group brings (dataset.image_size) are composed by Hydra
        structural = tuple(o.input_line for o in parsed if not _plain_in(plain_in, (), o, default))
        if structural not in structures:
            cfg = compose(config_name, overrides=[*hydra_overrides, *structural])
            structures[structural] = cfg, _uninterpolated(cfg)
        base, plain = structures[structural]
        rest = [o for o in parsed if o.input_line not in structural]
        if not all(_plain_in(plain_in, structural, o, base) for o in rest):
            return OmegaConf.to_container(compose(config_name, overrides=[*hydra_overrides, *job]), resolve=True)
        if plain is None:
            cfg = copy.deepcopy(base)
            for override in rest:
                OmegaConf.update(cfg, override.key_or_group, override.value(), merge=True)
            return OmegaConf.to_container(cfg, resolve=True)
        out = copy.deepcopy(plain)
        for override in rest:
            *path, last = override.key_or_group.split(".")
            node = out
            for key in path:
                node = node[key]
            node[last] = override.value()
        return out

    return compose_job


def _plain_in(cache: dict, structure: tuple[str, ...], override: Override, base: DictConfig) -> bool:
    """_plain, once per structure and override."""
    key = (structure, override.input_line)
    if key not in cache:
        cache[key] = _plain(override, base)
    return cache[key]


def _uninterpolated(cfg: DictConfig) -> dict | None:
    """The config as a plain dict, or None when some value interpolates another (`${...}`): setting a plain value
    in the dict would then leave the values that follow it stale."""
    plain = OmegaConf.to_container(cfg, resolve=False)

    def interpolates(value) -> bool:
        if isinstance(value, dict):
            return any(interpolates(v) for v in value.values())
        if isinstance(value, list):
            return any(interpolates(v) for v in value)
        return isinstance(value, str) and "${" in value

    return None if interpolates(plain) else plain
