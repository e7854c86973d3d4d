"""A split's result: one record type from the worker to the manifest.

A split's task builds one :class:`SplitRecord`: the runner starts it with the split's identity
(:meth:`SplitRecord.of_split`), the stage's per-split function adds what it measured (for
``select``, :func:`~datamask.pipeline.select_split.select_split` makes its fields straight from
the method's :class:`~datamask.methods.registry.Selection`), the worker writes its
:meth:`~SplitRecord.to_dict` as ``_datamask/parts/NAME.json`` after the split's data, and the
task hands the object itself to the client (no JSON text in between), which checks it and lists
its dict in the manifest. The dict is the stored form: ``datamask status``, ``report`` and a
resumed run read the parts and the manifest as before (:meth:`SplitRecord.from_dict` reads one
back).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

__all__ = ["SplitRecord"]


@dataclass
class SplitRecord:
    """One split's record: where its rows came from, how many went in and out, and the stage's own
    fields (``fields``: for ``select`` ``budget``, ``before``, ``after``, ``optimizer``, ``tokens_*``,
    ``side_by_side``, ``why`` ...; the runner's ``files``, ``rows_written``, ``wall_seconds``)."""

    name: str | None = None  # the split's file stem (None: a frame's partition, or fields to merge)
    identity: str | None = None
    source: str | None = None
    start: int | None = None
    stop: int | None = None
    rows_in: int | None = None
    rows_out: int | None = None
    fields: dict = field(default_factory=dict)

    @classmethod
    def of_split(cls, s, n_rows: int) -> SplitRecord:
        """The record a split's task starts with: its name, identity, file and row range, rows in."""
        return cls(s.name, s.identity, s.rel, s.start, s.stop, int(n_rows))

    def update(self, more=None, **kw) -> SplitRecord:
        """Add ``more`` (a dict or a record) and ``kw``: a value given replaces the one held."""
        d = more.to_dict() if isinstance(more, SplitRecord) else dict(more or {})
        d.update(kw)
        for k, v in d.items():
            if k in _OWN:
                setattr(self, k, v)
            else:
                self.fields[k] = v
        return self

    def get(self, key: str, default=None):
        """A field's value (an attribute or one of ``fields``), ``default`` when absent."""
        if key in _OWN:
            v = getattr(self, key)
            return default if v is None else v
        return self.fields.get(key, default)

    def to_dict(self) -> dict:
        """The stored form: one flat dict (the manifest's ``splits`` entry), fields left None omitted."""
        own = {k: getattr(self, k) for k in _OWN if getattr(self, k) is not None}
        return {**own, **self.fields}

    @classmethod
    def from_dict(cls, d: dict) -> SplitRecord:
        return cls().update(d)


_OWN = tuple(f.name for f in fields(SplitRecord) if f.name != "fields")
