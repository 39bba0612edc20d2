"""Persistent classes for repro's test fixtures.

An instance of a class decorated with persistent_class pickles as a call to
_reconstruct_persistent_obj with one dict argument: type 'class', version 6,
the full source text of the defining module, the class name and the
instance state. Unpickling builds a fresh module from that text. This is
the record layout of EDM snapshots, implemented here from its description
for tests; it is not EDM's code.
"""

import copy
import inspect
import sys
import types
import uuid

_version = 6
_module_to_src_dict = {}
_src_to_module_dict = {}
_persistent = set()


def _module_to_src(module):
    src = _module_to_src_dict.get(module)
    if src is None:
        src = inspect.getsource(module)
        _module_to_src_dict[module] = src
        _src_to_module_dict[src] = module
    return src


def _src_to_module(src):
    module = _src_to_module_dict.get(src)
    if module is None:
        module = types.ModuleType("_imported_module_" + uuid.uuid4().hex)
        sys.modules[module.__name__] = module
        _module_to_src_dict[module] = src
        _src_to_module_dict[src] = module
        exec(compile(src, module.__name__, "exec"), module.__dict__)
    return module


def is_persistent(cls):
    return cls in _persistent


def persistent_class(cls):
    if is_persistent(cls):
        return cls
    src = _module_to_src(sys.modules[cls.__module__])

    class Persistent(cls):
        _repro_src = src
        _repro_class_name = cls.__name__

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._init_args = copy.deepcopy(args)
            self._init_kwargs = copy.deepcopy(kwargs)

        @property
        def init_args(self):
            return copy.deepcopy(self._init_args)

        @property
        def init_kwargs(self):
            return copy.deepcopy(self._init_kwargs)

        def __reduce__(self):
            fields = list(super().__reduce__()) + [None, None, None]
            meta = {"type": "class", "version": _version, "module_src": self._repro_src,
                    "class_name": self._repro_class_name, "state": fields[2]}
            return (_reconstruct_persistent_obj, (meta,), None)

    Persistent.__name__ = cls.__name__
    Persistent.__qualname__ = cls.__qualname__
    Persistent.__module__ = cls.__module__
    _persistent.add(Persistent)
    return Persistent


def _reconstruct_persistent_obj(meta):
    if meta["type"] != "class" or meta["version"] != _version:
        raise ValueError("unsupported persistent record")
    module = _src_to_module(meta["module_src"])
    cls = persistent_class(module.__dict__[meta["class_name"]])
    obj = cls.__new__(cls)
    setstate = getattr(obj, "__setstate__", None)
    if callable(setstate):
        setstate(meta["state"])
    else:
        obj.__dict__.update(meta["state"])
    return obj
