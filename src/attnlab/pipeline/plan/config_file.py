"""Which config file a Snakemake run builds, read from its command line.

`--config file=PATH` hands Snakemake only a path, so no parser but attnlab's
ever reads the file; `--configfile PATH` is parsed by Snakemake too. Every other
--config value is refused: a config file is read whole, never merged.
"""

from __future__ import annotations

from pathlib import Path

from attnlab.core.errors import ConfigError

CONFIG_KEY = "file"  # snakemake --config file=PATH


def config_values_given(argv) -> list[str]:
    """The KEY=VALUE words a Snakemake command line gives after --config (Snakemake keeps only the last of each
    key, so two file= values would silently build the second)."""
    values, taking = [], False
    for word in map(str, argv or ()):
        if word == "--config" or word.startswith("--config="):
            taking = word == "--config"
            if word.startswith("--config="):
                values.append(word.split("=", 1)[1])
            continue
        if word.startswith("-"):
            taking = False
        elif taking:
            values.append(word)
    return values


def snakemake_config_file(configfiles, overrides, default: Path, reparse=None, argv=None) -> Path:
    """The config file a Snakemake run names, from its --configfile list and its --config values.

    `--config file=PATH` hands Snakemake only a path: the file itself is read by load_config alone,
    so it is safe for a file from anyone. `--configfile PATH` also works, but Snakemake parses that
    file itself first (a YAML file marked `__use_yte__: true` is a YTE template, which runs code):
    trusted files only. Neither given: `default`. `overrides` is what Snakemake made of the
    --config values (it parses each as YAML); `reparse`, Snakemake's own parser of them
    (snakemake.cli.parse_config), checks that its jobs, handed the value again, read the same path;
    `argv`, the command line, tells a file= given twice (which `overrides` no longer shows).
    """
    configfiles = [str(f) for f in configfiles or ()]
    overrides = dict(overrides or {})
    named = [v for v in config_values_given(argv) if v.split("=", 1)[0] == CONFIG_KEY]
    if len(named) > 1:
        raise ConfigError(f"--config {CONFIG_KEY}= is given {len(named)} times ({', '.join(named)}); Snakemake would "
                          f"build the last one only: give the config file once")
    others = sorted(str(key) for key in overrides if key != CONFIG_KEY)
    if others:
        raise ConfigError(f"--config {', '.join(f'{k}=...' for k in others)}: --config takes only "
                          f"{CONFIG_KEY}=PATH, the config file to build; KEY=VALUE overrides are not supported: write "
                          f"the values into a copy of the config file and pass it with --config {CONFIG_KEY}=PATH")
    if len(configfiles) > 1:
        raise ConfigError(f"give one config file, not {len(configfiles)} --configfile: a config file is read whole, "
                          "never merged")
    if CONFIG_KEY not in overrides:
        return Path(configfiles[0]) if configfiles else Path(default)
    if configfiles:
        raise ConfigError(f"give the config file once: --config {CONFIG_KEY}=PATH (read by attnlab alone, safe for any "
                          "file) or --configfile PATH (Snakemake parses it too: trusted files only), not both")
    value = overrides[CONFIG_KEY]
    if value is None or value == "":
        raise ConfigError(f"--config {CONFIG_KEY}= names no file; give its path: --config {CONFIG_KEY}=PATH")
    if not isinstance(value, str):
        raise ConfigError(f"--config {CONFIG_KEY}=: Snakemake read the value as the {type(value).__name__} {value!r}, "
                          "not as a path (it parses --config values as YAML); write the path so that it reads as "
                          "text, for example starting with ./")
    again = reparse([f"{CONFIG_KEY}={value}"]).get(CONFIG_KEY) if reparse is not None else value
    if again != value:
        raise ConfigError(f"--config {CONFIG_KEY}={value}: Snakemake would read this path back as {again!r} in its "
                          "jobs (it parses --config values as YAML); rename the file or its folder to plain "
                          "characters")
    return Path(value)
