"""The studies: one folder each (`harness/studies/<name>/`) for every study with behaviour of its own, found by the
name its preset gives (`+study=<name>`, conf/study/<name>.yaml) through `registry`, each implementing the one
interface of `study.Study`: its settings and their checks, its plan of jobs and later rounds, the hooks its runs
need, its reading of a sweep, its report section, its files, its findings lines and its results columns. The
generic wings never name a study: the commands above them look one up here and hand its pieces down. A study
that is only a Hydra preset (causes, shuffle, ...) stays a YAML in conf/study/ and is read as a batch-size study.

May import: harness.assess, harness.run (in a study's run hooks only, loaded by the run process), harness.config,
harness.data, harness.models, harness.store, harness.fields, and the report's kit (harness.render); never
harness.launch or the report's page (harness.report).
A study's `__init__` loads no backend: its run hooks are imported when a run asks for them.
"""
