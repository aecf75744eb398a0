"""Model folders for the CosyVoice stand-in (tests/cosyvoice_standin): what the adapter needs to
find in a real one (the yaml that names the model class, spk2info.pt for pretrained speakers)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT

STANDIN_REPO = ROOT / "tests" / "cosyvoice_standin"


def make_model_dir(path: Path, version: int = 3, speakers: tuple[str, ...] = ()) -> Path:
    """A model folder of CosyVoice ``version`` (1, 2 or 3) with these pretrained speakers."""
    path.mkdir(parents=True, exist_ok=True)
    yaml = {1: "cosyvoice.yaml", 2: "cosyvoice2.yaml", 3: "cosyvoice3.yaml"}[version]
    (path / yaml).write_text("# stand-in\n")
    if speakers:
        (path / "spk2info.pt").write_text("\n".join(speakers) + "\n")
    return path


def read_calls(log: Path) -> list[dict]:
    """The stand-in's record of model calls (``event == "call"``) and constructions (``"init"``)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
