"""The solvers' compiled kernels (numba): the MILP descent's (solvers/milp/kernels.py), flux's
(solvers/baseline_kernels.py), the statistics' (solvers/metrics_kernels.py) and CLB's search steps
(solvers/stateful/variance_kernels.py).

`warm_up()` compiles each, or loads it from numba's on-disk cache, once per process where no request's clock runs
(the service before it forks its solver workers, which inherit them; `make` fills the cache at install). Until then,
and wherever numba cannot compile, the solvers run the numpy code each kernel replaces: the same decisions, slower.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import warnings
from types import ModuleType
from typing import Any


def warm_up() -> bool:
    """Make every kernel ready in this process (idempotent); True when all are."""
    from solvers import baselines, metrics
    from solvers.milp import local_search
    from solvers.stateful import variance_search

    ready = [local_search.warm_up(), baselines.warm_up(), metrics.warm_up(), variance_search.warm_up()]
    return all(ready)


def load_kernels(module: str, without: str) -> ModuleType | None:
    """Import a kernels' module (in a writable cache, see `writable_cache`) and run its `compile_all()`: the module,
    or None after a warning that says what runs `without` it. Any failure of this optional speed-up leaves the
    numpy code, which is complete."""
    try:
        writable_cache()
        kernels = importlib.import_module(module)
        kernels.compile_all()
    except Exception as error:
        warnings.warn(f"{without}: {error!r}", stacklevel=3)
        return None
    return kernels


def writable_cache() -> None:
    """numba uses a cache directory only where it can write (it tries a temporary file there) and compiles again
    otherwise. A cache built into a read-only place (an image's venv under a read-only root file system, as the
    compose file runs the service) is copied to a writable temporary directory first, so its kernels load in under
    a second instead of compiling for 11-16 s. Runs before a kernels' module is imported: numba picks the cache
    directory when a cached function is defined."""
    from numba.core import config as numba_config

    # numba sets its settings at import from the environment: no attributes to type-check
    config: Any = numba_config
    cache = config.CACHE_DIR
    if not cache or not os.path.isdir(cache) or os.access(cache, os.W_OK):
        return
    copy = os.path.join(tempfile.gettempdir(), "trimtab-numba-cache")
    shutil.copytree(cache, copy, dirs_exist_ok=True)
    config.CACHE_DIR = copy
