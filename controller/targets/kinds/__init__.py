"""One module per target kind (see controller/targets/registry.py): every public module
here is scanned and must define `KIND`. Modules starting with `_` are not kinds."""
