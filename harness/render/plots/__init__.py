"""The report's figures, one module per assess module whose numbers it draws (`why.py` draws harness.assess.why),
`sweep.py` the sweep-wide figures and the helpers they share. matplotlib's Figure API only (never pyplot).
"""
