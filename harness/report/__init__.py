"""What a reader opens: a sweep's HTML report (`html`, `templates/report.html.j2`, `python -m harness.report`) and
its results table (`results`, `python -m harness.results`). The page sits above the studies: it finds a sweep's
study (harness.studies.registry) and lays out its sections beside the batch-size reading, drawn with the kit below
the studies (harness.render).

May import: harness.studies, harness.render, harness.assess, harness.store; never a backend or Hydra.
"""
