"""Keyword-style dataclass fields (flax.linen.kw_only_dataclasses), as Flax keeps them: a field
marked keyword-only (`field(kw_only=True)`, or declared after an annotation `_: KW_ONLY`) is
moved to the end of `__init__`'s parameters, after every other field of the class and of its
subclasses, so a subclass may add fields without defaults after a base whose fields have them.
It must have a default and is passed by keyword (`__init__` refuses more positional
arguments than the other fields), though `inspect.signature` lists it as an ordinary
parameter, as Flax's does. Python's own `dataclasses.field(kw_only=True)` and
`dataclasses.KW_ONLY` keep their meaning (true keyword-only parameters).

    @kw_only_dataclasses.dataclass
    class Base:
        name: str = kw_only_dataclasses.field(default=None, kw_only=True)

    @kw_only_dataclasses.dataclass
    class Child(Base):
        size: int            # Child(size, name=None)
"""
from __future__ import annotations

import copy
import dataclasses
import functools

__all__ = ["KW_ONLY", "dataclass", "field"]


class _KwOnlyType:
    """The marker: an annotation `_: KW_ONLY` makes the fields after it keyword-style, and
    the key under which a field's metadata records that it is one."""

    def __repr__(self):
        return "KW_ONLY"


KW_ONLY = _KwOnlyType()


def _no_default(default, default_factory) -> bool:
    return default is dataclasses.MISSING and default_factory is dataclasses.MISSING


def field(*, metadata=None, kw_only=dataclasses.MISSING, **kwargs):
    """dataclasses.field; `kw_only=True` records the field as keyword-style (moved to the end
    of `__init__`'s parameters), which needs a default or a default_factory."""
    if kw_only is not dataclasses.MISSING and kw_only:
        if _no_default(kwargs.get("default", dataclasses.MISSING),
                       kwargs.get("default_factory", dataclasses.MISSING)):
            raise ValueError("Keyword-only fields with no default are not supported.")
        metadata = {**(metadata or {}), KW_ONLY: True}
    return dataclasses.field(metadata=metadata, **kwargs)


def _is_kw_only(value) -> bool:
    return isinstance(value, dataclasses.Field) and bool(value.metadata.get(KW_ONLY, False))


def _mark_kw_only(cls, name: str) -> None:
    """The class attribute of field `name` (a default or a Field) as a keyword-style Field."""
    value = cls.__dict__.get(name, dataclasses.MISSING)
    if isinstance(value, dataclasses.Field):
        if _no_default(value.default, value.default_factory):
            raise ValueError("Keyword-only fields with no default are not supported.")
        marked = copy.copy(value)
        marked.metadata = {**value.metadata, KW_ONLY: True}
    elif value is dataclasses.MISSING:
        raise ValueError("Keyword-only fields with no default are not supported.")
    else:
        marked = field(default=value, kw_only=True)
    setattr(cls, name, marked)


def dataclass(cls=None, extra_fields=None, **kwargs):
    """dataclasses.dataclass (with its `kwargs`) that moves keyword-style fields, the class's
    own and those it inherits, after the others. `extra_fields`: (name, type, Field) triples
    added to the class's own fields first (for bases that are not dataclasses themselves)."""
    if cls is None:
        return lambda c: dataclass(c, extra_fields=extra_fields, **kwargs)
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    for name, typ, fld in extra_fields or ():
        annotations[name] = typ
        setattr(cls, name, fld)
    # Fields after an annotation `_: KW_ONLY` become keyword-style; the marker goes away.
    marker = next((n for n, t in annotations.items() if t is KW_ONLY), None)
    if marker is not None:
        names = list(annotations)
        for name in names[names.index(marker) + 1:]:
            _mark_kw_only(cls, name)
        del annotations[marker]
        if marker in cls.__dict__:
            delattr(cls, marker)
    own_kw = [n for n in annotations if _is_kw_only(cls.__dict__.get(n))]
    # Inherited keyword-style fields are hidden from the bases while the class is processed
    # and redeclared by the class after its own plain fields (a redefinition keeps that place),
    # then come its own keyword-style fields.
    hidden: dict = {}
    for base in reversed(cls.__mro__[1:]):
        for name, f in getattr(base, "__dataclass_fields__", {}).items():
            if _is_kw_only(f):
                hidden[name] = f
            else:
                hidden.pop(name, None)
    ordered = {n: t for n, t in annotations.items() if n not in own_kw and n not in hidden}
    for name, f in hidden.items():
        if name in annotations:
            ordered[name] = annotations[name]
        else:
            ordered[name] = f.type
            setattr(cls, name, copy.copy(f))
    ordered.update({n: annotations[n] for n in own_kw if n not in hidden})
    cls.__annotations__ = ordered
    saved = {}
    for base in cls.__mro__[1:]:
        fields = base.__dict__.get("__dataclass_fields__")
        if fields is not None and any(n in fields for n in hidden):
            saved[base] = fields
            type.__setattr__(base, "__dataclass_fields__",
                             {n: f for n, f in fields.items() if n not in hidden})
    try:
        cls = dataclasses.dataclass(cls, **kwargs)
    finally:
        for base, fields in saved.items():
            type.__setattr__(base, "__dataclass_fields__", fields)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    if kwargs.get("init", True) and any(_is_kw_only(f) for f in fields):
        _refuse_positional_kw_only(cls, sum(not _is_kw_only(f) for f in fields))
    return cls


def _refuse_positional_kw_only(cls, positional: int) -> None:
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if len(args) > positional:
            raise TypeError(f"__init__() takes {positional + 1} positional arguments but "
                            f"{len(args) + 1} were given")
        init(self, *args, **kwargs)

    cls.__init__ = __init__
