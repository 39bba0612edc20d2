"""A small persistence mechanism for test fixtures.

Classes decorated with persistent_class pickle themselves as a call to
_reconstruct_persistent_obj whose single argument is a dict carrying the
full source text of the defining module, the class name, a format version
and the instance state. Unpickling rebuilds the module from that text.
This mirrors the shape of the snapshots the decoder under test must read;
it is test-only code and is never imported by the Go program.
"""

import copy
import inspect
import sys
import types
import uuid

_version = 6
_src_by_module = {}   # module name -> source text
_module_by_src = {}   # source text -> module built from it


def _source_of(module):
    src = _src_by_module.get(module.__name__)
    if src is None:
        src = inspect.getsource(module)
        _src_by_module[module.__name__] = src
    return src


def _module_from_src(src):
    module = _module_by_src.get(src)
    if module is None:
        name = "_fixture_module_" + uuid.uuid4().hex
        module = types.ModuleType(name)
        sys.modules[name] = module
        _src_by_module[name] = src
        _module_by_src[src] = module
        exec(compile(src, name, "exec"), module.__dict__)
    return module


def persistent_class(orig):
    src = _source_of(sys.modules[orig.__module__])

    class Wrapped(orig):
        _fixture_src = src
        _fixture_class_name = orig.__name__

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._init_args = copy.deepcopy(args)
            self._init_kwargs = copy.deepcopy(kwargs)

        def __reduce__(self):
            parts = list(super().__reduce__())
            parts += [None] * max(3 - len(parts), 0)
            meta = dict(type="class", version=_version, module_src=self._fixture_src,
                        class_name=self._fixture_class_name, state=parts[2])
            return (_reconstruct_persistent_obj, (meta,), None) + tuple(parts[3:])

    Wrapped.__name__ = orig.__name__
    Wrapped.__qualname__ = orig.__qualname__
    Wrapped.__module__ = orig.__module__
    return Wrapped


def _reconstruct_persistent_obj(meta):
    assert meta["type"] == "class" and meta["version"] == _version
    module = _module_from_src(meta["module_src"])
    cls = module.__dict__[meta["class_name"]]
    obj = cls.__new__(cls)
    state = meta["state"] or {}
    setstate = getattr(obj, "__setstate__", None)
    if callable(setstate):
        setstate(state)
    else:
        obj.__dict__.update(state)
    return obj
