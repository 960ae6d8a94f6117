"""What a reader sees: the figures (matplotlib's Figure API, `plots/`, one module per assess module it draws), the
HTML report, the reports index and the results table.

May import: harness.assess, harness.store; never a backend or Hydra.
"""
