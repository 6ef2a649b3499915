"""The planner: which cells and rules a config asks for, in what packs, on which device, and what each rule
reads (`rules.Plan`, which workflow/rules/*.smk call). What the stages share with it lives in
attnlab.pipeline.ground. Pipeline side: no JAX.
"""
