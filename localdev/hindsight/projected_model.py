"""A second offline embedding model for testing a change of embedding model: all-MiniLM-L6-v2, then a fixed
random isometry from 384 into 512 dimensions.

Why this model: the change-of-model procedure must be shown to keep recall working (paraphrases included) while the
vectors change completely. Nothing else that embeds paraphrases runs offline here, so this one is derived from the
shipped MiniLM: a linear map with orthonormal columns (seeded, so every build is identical) keeps every cosine
similarity and puts the vectors in another space of another dimension. An old 384-dimension vector cannot even be
compared with a new one, and the schema's vector column must change type: the two hard parts of a real change.
What it cannot show is a model that also judges similarity differently (MiniLM to Titan), which needs the real one.

Built once per virtualenv, in the Hindsight virtualenv's own Python (it needs torch and sentence-transformers),
under ``<venv>/minilm-projected-512`` (~90 MB, about 10 s).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Final

from localdev.hindsight.errors import HindsightStartError
from localdev.hindsight.venv import HindsightVenv

__all__ = ["PROJECTED_DIMENSION", "projected_model_dir"]

PROJECTED_DIMENSION: Final = 512
_SEED: Final = 20261201
_BUILD: Final = """
import sys, numpy as np, torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules.dense import Dense
source, target, dim, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
model = SentenceTransformer(source, device="cpu")
width = model.get_sentence_embedding_dimension()
q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, width)))  # orthonormal columns
model.append(Dense(width, dim, bias=False, activation_function=torch.nn.Identity(),
                   init_weight=torch.tensor(q, dtype=torch.float32)))
model.save(target)
"""


def projected_model_dir(venv: HindsightVenv) -> Path:
    """The projected model's directory, built on first use (idempotent; a half-built one is rebuilt)."""
    target = venv.path / f"minilm-projected-{PROJECTED_DIMENSION}"
    done = target / ".built"
    if done.exists():
        return target
    python = venv.path / "bin" / "python"
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    args = [str(venv.embedding_model_dir()), str(target), str(PROJECTED_DIMENSION), str(_SEED)]
    completed = subprocess.run(
        [str(python), "-c", _BUILD, *args], capture_output=True, text=True, env=env, check=False, timeout=600
    )
    if completed.returncode != 0:
        raise HindsightStartError(f"could not build the projected embedding model: {completed.stderr[-2000:]}")
    done.write_text("ok\n")
    return target
