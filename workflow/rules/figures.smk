# One rule per figure, generated from the figure catalog (attnlab.pipeline.figures.catalog): its
# module, the tables it reads, its outputs and its caption. A figure reads tables (and the bundles
# runs.csv points at), never trains; its params are the fingerprint of the code it imports and the
# `figures` config section, so editing one figure module or a colour reruns only figures.

from attnlab.pipeline.figures import catalog as figure_catalog  # noqa: E402

# The figures this build draws: every figure of the catalog, but a study's figures (the scale ladder's)
# only when the config has that study.
DRAWN = [entry for entry in figure_catalog.FIGURES if entry.drawn_for(GRID.names())]
# Every file the figure rules write (an animation's poster included): rule all and the writeup need them.
FIGURES = [str(path) for entry in DRAWN for path in entry.output_paths().values()]
# One caption per figure, the single source of both the Snakemake report's captions and the
# writeup's numbered ones (the writeup reads them; editing a caption reruns only the writeup).
CAPTIONS = [str(entry.caption) for entry in DRAWN]


def figure_style(wildcards=None):
    """The `figures` config section as shell-quoted JSON: presentation only, never retrains."""
    return shlex.quote(attnlab_config.to_json(config.get("figures", {})))


def figure_outputs(entry):
    """The figure's file, as a Snakemake report item captioned from workflow/report, and an animation's poster."""
    found = entry.output_paths()
    outputs = {"file": report(str(found["file"]), caption=str(Path("..") / "report" / entry.caption.name),
                              category="Figures")}
    if "poster" in found:
        outputs["poster"] = str(found["poster"])
    return outputs


def figure_arguments(entry):
    """The command line's --table NAME=PATH for each table the figure reads (their paths are its inputs)."""
    return " ".join(shlex.quote(f"--table={name}={path}") for name, path in entry.table_paths().items())


for figure in DRAWN:

    rule:
        name:
            figure.rule
        localrule: True
        input:
            **{name: str(path) for name, path in figure.table_paths().items()},
        output:
            **figure_outputs(figure),
        params:
            code=pipeline_code(figure.module),
            style=figure_style,
            module=figure.module,
            tables=figure_arguments(figure),
            poster=f"--poster {figure.output_paths()['poster']}" if figure.animated else "",
        log:
            str(paths.LOGS / "figures" / f"{figure.name}.log"),
        message:
            figure.message
        shell:
            "python -m {params.module} {params.tables} --style {params.style} --out {output.file} {params.poster} "
            "> {log} 2>&1"
