"""Where things live in a workspace (SPEC section 1), derived from the Config."""

from __future__ import annotations

from loopkit import atomicfile
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from loopkit.config import Config


@record(frozen=True, slots=True)
class Workspace:
    root: Path
    blocked: Path

    @classmethod
    def of(cls, config: Config) -> Workspace:
        return cls(root=config.workspace, blocked=config.blocked_path)

    @property
    def requests_dir(self) -> Path:
        return self.root / "requests"

    @property
    def state_dir(self) -> Path:
        return self.root / ".loopkit"

    @property
    def events_file(self) -> Path:
        return self.state_dir / "events.jsonl"

    @property
    def running_file(self) -> Path:
        """The command running now, for the next supervisor if this one is killed."""
        return self.state_dir / "running.json"

    @property
    def locks_dir(self) -> Path:
        return self.state_dir / "locks"

    @property
    def template_override(self) -> Path:
        return self.root / "templates" / "BLOCKED.md.j2"

    def repo_name(self) -> str:
        """The basename of the git top-level holding the workspace, else of the workspace."""
        root = self.root.resolve()
        for folder in (root, *root.parents):
            if (folder / ".git").exists():
                return folder.name or str(folder)
        return root.name or str(root)

    def stale_temps(self) -> bool:
        """Whether :meth:`sweep_temps` would remove anything."""
        return any(atomicfile.stale(folder) for folder in self._temp_folders()) or bool(
            atomicfile.stale(self.blocked.parent, names=(self.blocked.name,))
        )

    def _temp_folders(self) -> tuple[Path, ...]:
        return (self.state_dir, self.requests_dir, self.locks_dir)

    def sweep_temps(self) -> int:
        """Remove temporary files a crash left between write and rename (loopkit's own
        naming only; in the workspace root only those of the block file)."""
        removed = sum(atomicfile.sweep(folder) for folder in self._temp_folders())
        return removed + atomicfile.sweep(self.blocked.parent, names=(self.blocked.name,))
