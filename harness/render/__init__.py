"""The report's kit, which the page (harness.report) and the studies' sections both draw with: the figures
(`plots/`, one module per assess module it draws, on matplotlib's Figure API; `figures` renders them), the tables'
cells (`tables`), the Jinja environment and what every page imports (`pages`, `templates/macros.html.j2` and the
`fmt` filter), the reports index (`index`, `templates/index.html.j2`) and the summary each report embeds for it
(`summary`). It sits below the studies and names none of them.

May import: harness.assess, harness.store; never a study, the report's page, a backend or Hydra.
"""
