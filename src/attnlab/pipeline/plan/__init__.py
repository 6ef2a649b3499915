"""The front of the flow: which cells a config asks for, where their bundles live, and what each rule reads.

`rules.Plan` is what workflow/rules/*.smk call; the grid, the paths, the bundle
reader and the build manifest are its parts. Pipeline side: no JAX.
"""
