"""The paper's figures: one module per figure, each a load and a draw run by one command line.

Every figure is listed in `catalog` (its tables, outputs and caption; the
figure rules are generated from it). A figure reads tables and the bundles
runs.csv lists, never trains and never recomputes what a table or bundle holds.

The rest of this package is what the figures share, one job per module:
`style` (colours, markers, the config's figure settings), `cells` (reading
tables, which runs a figure shows), `window` and `maps` (the attention
window's characters, attention maps), `heatmap` (layer x head grids), `save`
and `gif` (atomic writes of stills and animations with their posters) and
`main` (figure_main, the command line).
"""
