"""The ground every pipeline stage stands on: where a build's files live (paths), reading bundles
(bundle_reader), the contest's grid and seed rounds as every stage reads them (grid, contest_grid, rounds,
sweep_extension), the table contract, statistics and their designs (statistics, design, confidence_sequence,
group_sequential, sign_test), how numbers and estimates are written (formatting, estimate_text), the posts'
published numbers (published), the build manifest, the figure catalog, the printer and the environment.

The planner (attnlab.pipeline.plan) and every stage (tables, claims, figures, report) import from here; nothing
here imports a stage or the planner (tests/test_layout.py checks the flow).
"""
