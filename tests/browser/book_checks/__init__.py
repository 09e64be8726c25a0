"""The checks of tests/browser/check_book.py, one module per job: common (constants, the report,
page helpers), structural (part A, no browser), teaching (issue 40's measures of how the
book teaches), browser (part B, in Chromium), with live (the live widgets) and plotly_keys
(the Plotly figures from the keyboard)."""
