"""One cell trained in this process by the rules' trainer (attnlab.training.pack.run_pack, a pack of one):
the way tests about numbers, not processes, train, so none calls a trainer entry the build does not."""

from __future__ import annotations

from pathlib import Path


def quiet(*_) -> None:
    pass


def train_alone(cfg: dict, key, corpus: Path, out: Path, checkpoint_dir: Path | None = None, log=quiet,
                **kwargs) -> dict:
    """Train `key` from the config slice `cfg` into the bundle folder `out`; returns its bundle summary."""
    from attnlab.training.pack import run_pack

    done = run_pack(cfg, [key], corpus, None, checkpoint_dir=checkpoint_dir, log=log, outs=[Path(out)], **kwargs)
    return done[0][0]
