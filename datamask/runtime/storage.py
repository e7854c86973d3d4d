"""Where a stage reads and writes: local paths and every URL fsspec knows (``s3://``, ``gs://``,
``az://``, ``hf://``, ``file://``, ``memory://``...).

A path is resolved once, on the client (:func:`resolve`): a local path becomes absolute (a
worker started in another directory, or on another node, finds the same file), ``file://``
becomes a local path, a URL stays a URL. Local paths are :class:`pathlib.Path`; a URL is a
:class:`Remote`, which has the few ``Path`` methods the pipeline uses, over fsspec.

Storage options (``--storage-options JSON``, the workflow key ``storage_options``) are this
process's (:func:`set_options`); the runner sends them to every worker with
:class:`~datamask.runtime.storage_plugin.StorageOptionsPlugin` (a module of its own: this one
imports no Dask, so the command line reads paths and options without it). Without them each backend reads its standard environment
(for S3: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_PROFILE``...), on the client and on every worker.

Object stores have no rename: a file written to a :class:`Remote` is one object that appears
whole when its upload completes, or not at all; the runner's order (a split's files, then its
record, the manifest last) keeps a stopped run resumable there too. See ``docs/storage.md``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
from pathlib import Path

from ..errors import ConfigError

__all__ = [
    "is_url",
    "resolve",
    "location",
    "Remote",
    "set_options",
    "options",
    "parse_options",
    "filesystem",
    "open_file",
    "rmtree",
    "inside",
]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_OPTIONS: dict = {}


def is_url(p) -> bool:
    """True for ``proto://...`` other than ``file://`` (a local path)."""
    return isinstance(p, (str, Remote)) and bool(_URL.match(str(p))) and not str(p).startswith("file://")


def resolve(p):
    """``p`` as every node reads it: an absolute local path, or the URL (``file://`` -> local)."""
    if p is None:
        return None
    p = str(p)
    if p.startswith("file://"):
        p = p[len("file://") :]
    if is_url(p):
        proto, rest = p.split("://", 1)
        return f"{proto}://{rest.rstrip('/')}" if rest.rstrip("/") else p
    return os.path.abspath(os.path.expanduser(p))


def parse_options(value) -> dict:
    """``--storage-options`` as a dict: a JSON object (or a YAML mapping from a workflow)."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return dict(value)
    try:
        d = json.loads(value)
    except ValueError as e:
        raise ConfigError(f"--storage-options must be a JSON object, e.g. '{{\"anon\": true}}' ({e})") from None
    if not isinstance(d, dict):
        raise ConfigError("--storage-options must be a JSON object, e.g. '{\"anon\": true}'")
    return d


def set_options(opts: dict | None):
    """This process's storage options, passed to fsspec for every URL."""
    _OPTIONS.clear()
    _OPTIONS.update(opts or {})


def options() -> dict:
    return dict(_OPTIONS)


def filesystem(url: str):
    """``(fsspec filesystem, path inside it)`` of ``url``, with no cached listing of the path
    or its parents; a one-line ConfigError when the backend's package is missing or the
    protocol is unknown."""
    import fsspec.core

    try:
        fs, path = fsspec.core.url_to_fs(str(url), **_OPTIONS)
    except ImportError as e:
        proto = str(url).split("://", 1)[0]
        pkg = {
            "s3": "s3fs (pip install 'datamask[s3]')",
            "gs": "gcsfs",
            "gcs": "gcsfs",
            "az": "adlfs",
            "abfs": "adlfs",
            "hf": "huggingface_hub",
        }.get(proto, "its fsspec backend")
        raise ConfigError(
            f"{url}: {proto}:// needs {pkg} installed on the client and every worker ({str(e).splitlines()[0][:120]})"
        ) from None
    except ValueError as e:
        raise ConfigError(f"{url}: fsspec cannot open this URL ({str(e).splitlines()[0][:160]})") from None
    # Other processes (the workers) write here: a listing this process cached may be stale,
    # and fsspec would answer "no such file" from it. Every query asks the store again.
    fs.invalidate_cache(path)
    return fs, path


class Remote:
    """A URL with the ``pathlib.Path`` methods the pipeline uses, over fsspec.

    Holds only the URL string, so it pickles to workers, which find their own filesystem
    (and this process's storage options, see
    :class:`~datamask.runtime.storage_plugin.StorageOptionsPlugin`)."""

    def __init__(self, url: str):
        self.url = str(url).rstrip("/") if str(url).rstrip("/").count("://") else str(url)

    # ---- names
    @property
    def fs(self):
        return filesystem(self.url)[0]

    @property
    def path(self) -> str:
        return filesystem(self.url)[1]

    def __truediv__(self, other) -> Remote:
        return Remote(f"{self.url}/{str(other).strip('/')}")

    def __str__(self):
        return self.url

    def __repr__(self):
        return f"Remote({self.url!r})"

    def __eq__(self, other):
        return isinstance(other, Remote) and other.url == self.url

    def __hash__(self):
        return hash(self.url)

    @property
    def name(self) -> str:
        return posixpath.basename(self.url.split("://", 1)[1])

    @property
    def parent(self) -> Remote:
        proto, rest = self.url.split("://", 1)
        return Remote(f"{proto}://{posixpath.dirname(rest)}")

    def with_name(self, name) -> Remote:
        return self.parent / name

    def resolve(self) -> Remote:
        return self

    # ---- queries
    def exists(self) -> bool:
        fs, p = filesystem(self.url)
        return fs.exists(p)

    def is_dir(self) -> bool:
        fs, p = filesystem(self.url)
        return fs.isdir(p)

    def is_file(self) -> bool:
        fs, p = filesystem(self.url)
        return fs.isfile(p)

    def _child(self, fs, p) -> Remote:
        return self / posixpath.basename(p.rstrip("/"))

    def iterdir(self):
        fs, p = filesystem(self.url)
        try:
            names = fs.ls(p, detail=False)
        except FileNotFoundError:
            return iter(())
        return iter([self._child(fs, q) for q in names if q.rstrip("/") != p.rstrip("/")])

    def glob(self, pattern: str):
        fs, p = filesystem(self.url)
        return iter(sorted((self._child(fs, q) for q in fs.glob(f"{p.rstrip('/')}/{pattern}")), key=str))

    def rglob(self, pattern: str):
        fs, p = filesystem(self.url)
        base = p.rstrip("/")
        out = []
        for q in fs.find(base):
            if fnmatch.fnmatch(posixpath.basename(q), pattern):
                out.append(Remote(f"{self.url}/{q[len(base) :].lstrip('/')}"))
        return iter(out)

    def find(self) -> list:
        """Every file under this directory, as Remotes, sorted."""
        fs, p = filesystem(self.url)
        base = p.rstrip("/")
        return [Remote(f"{self.url}/{q[len(base) :].lstrip('/')}") for q in sorted(fs.find(base))]

    def size(self) -> int:
        fs, p = filesystem(self.url)
        return int(fs.size(p))

    # ---- reading and writing (each write is one object: whole, or absent)
    def open(self, mode="rb"):
        fs, p = filesystem(self.url)
        return fs.open(p, mode)

    def read_bytes(self) -> bytes:
        with self.open("rb") as fh:
            return fh.read()

    def read_text(self, encoding="utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes):
        with self.open("wb") as fh:
            fh.write(data)

    def write_text(self, text: str, encoding="utf-8"):
        self.write_bytes(text.encode(encoding))

    def unlink(self, missing_ok=False):
        fs, p = filesystem(self.url)
        try:
            fs.rm_file(p)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def mkdir(self, parents=False, exist_ok=False):
        fs, p = filesystem(self.url)
        try:
            fs.makedirs(p, exist_ok=True)  # object stores have no directories: a no-op there
        except (FileExistsError, NotImplementedError):
            pass

    def rmdir(self):
        if any(True for _ in self.iterdir()):
            raise OSError(f"{self.url} is not empty")


def location(p):
    """A :class:`pathlib.Path` for a local path, a :class:`Remote` for a URL."""
    if isinstance(p, (Path, Remote)):
        return p
    p = str(p)
    if p.startswith("file://"):
        return Path(p[len("file://") :])
    return Remote(p) if is_url(p) else Path(p)


def open_file(p, mode="rb"):
    """A file object of a local path or a URL."""
    loc = location(p)
    return loc.open(mode)


def rmtree(loc):
    """Remove a directory (a prefix of objects) and everything under it."""
    loc = location(loc)
    if isinstance(loc, Remote):
        fs, p = filesystem(loc.url)
        try:
            fs.rm(p, recursive=True)
        except FileNotFoundError:
            pass
    else:
        import shutil

        shutil.rmtree(loc, ignore_errors=True)


def inside(a, b) -> bool:
    """True when ``a`` is ``b`` or lies under it (both resolved). A glob ``b`` holds ``a`` when
    it could match a file ``a`` writes (``a/data/x.parquet``); with ``**``, anything under its base."""
    if re.search(r"[*?\[]", str(b)) and "**" not in str(b):
        from pathlib import PurePosixPath

        return any(PurePosixPath(f"{str(a).rstrip('/')}/{d}/x.parquet").match(str(b)) for d in ("data", "holdout"))

    def base(p):
        p = str(p)
        m = re.search(r"[*?\[]", p)
        if m:
            p = p[: m.start()].rsplit("/", 1)[0]
        return p.rstrip("/") + "/"

    return base(a).startswith(base(b))
