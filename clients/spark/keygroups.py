"""Key groups: `pmod(xxhash64(key columns), G)` in Spark and the same number from plain Python.

Spark's `xxhash64(c1, c2, ...)` (seed 42) chains over the columns: h = 42, then for each column h = XXH64(bytes of the
value, seed = h), a null column leaves h unchanged. The bytes per Spark type (Spark's `XxHash64Function`):

- StringType: the UTF-8 bytes; BinaryType: the bytes.
- IntegerType, ShortType, ByteType, DateType (days since 1970-01-01; a `datetime.date` is converted): the value as a
  4-byte little-endian int; BooleanType as int 1 / 0.
- LongType, TimestampType (pass microseconds since the epoch, UTC): an 8-byte little-endian long.
- FloatType: the float's IEEE bits as a 4-byte int; DoubleType: the double's bits as an 8-byte long; -0.0 hashes as
  0.0 and every NaN as the canonical NaN.

So the Python type alone does not say how an int hashes: Spark infers LongType for Python ints (what `key_group`
assumes), but a column read as IntegerType (e.g. from a CSV with `inferSchema` or a Kafka producer's int field)
hashes 4 bytes. Pass `types=` naming the Spark type of each key column when it is not the default.

A key whose columns are all null keeps the seed: xxhash64 = 42, key group 42 mod G. Rows with null keys therefore all
land in one key group; that is Spark's behaviour, and we keep it so producers outside Spark agree.

This module imports pyspark only inside `key_group_column`: producers outside Spark need just `xxhash`.
"""

from __future__ import annotations

import datetime
import math
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import xxhash

if TYPE_CHECKING:
    from pyspark.sql import Column

SPARK_SEED = 42
_EPOCH = datetime.date(1970, 1, 1)
_MASK64 = (1 << 64) - 1
_FOUR_BYTE_TYPES = {"int", "integer", "short", "byte", "date"}
_EIGHT_BYTE_TYPES = {"long", "bigint", "timestamp"}
SUPPORTED_TYPES = (
    "string",
    "binary",
    "boolean",
    *sorted(_FOUR_BYTE_TYPES),
    *sorted(_EIGHT_BYTE_TYPES),
    "float",
    "double",
)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _infer_type(value: Any) -> str:
    # bool before int: bool is a subclass of int in Python, BooleanType in Spark.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes | bytearray | memoryview):
        return "binary"
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return "date"
    raise TypeError(
        f"cannot hash a {type(value).__name__} like Spark does; convert it to one of str, bytes, bool, int, "
        f"float, or pass types= ({', '.join(SUPPORTED_TYPES)})"
    )


def _value_bytes(value: Any, spark_type: str) -> bytes:
    kind = spark_type.lower()
    if kind == "string":
        return str(value).encode("utf-8")
    if kind == "binary":
        return bytes(value)
    if kind == "boolean":
        return struct.pack("<i", 1 if value else 0)
    if kind == "date" and isinstance(value, datetime.date):
        if isinstance(value, datetime.datetime):
            raise TypeError("a DateType key takes a datetime.date (or days since 1970-01-01), not a datetime")
        return struct.pack("<i", (value - _EPOCH).days)
    if kind in _FOUR_BYTE_TYPES:
        return struct.pack("<i", int(value))
    if kind in _EIGHT_BYTE_TYPES:
        return struct.pack("<q", int(value))
    if kind == "float":
        number = float(value)
        number = math.nan if math.isnan(number) else (0.0 if number == 0.0 else number)
        return struct.pack("<f", number)
    if kind == "double":
        number = float(value)
        number = math.nan if math.isnan(number) else (0.0 if number == 0.0 else number)
        return struct.pack("<d", number)
    raise ValueError(f"unsupported Spark type {spark_type!r}; supported: {', '.join(SUPPORTED_TYPES)}")


def spark_xxhash64(values: Sequence[Any], types: Sequence[str | None] | None = None) -> int:
    """What Spark's `xxhash64(c1, ..., cn)` returns (a signed 64-bit int) for one row with these column values.

    `types[i]` is the Spark type name of column i (None: inferred from the Python value)."""
    if types is not None and len(types) != len(values):
        raise ValueError(f"types has {len(types)} entries for {len(values)} key columns")
    digest = SPARK_SEED
    for i, value in enumerate(values):
        if value is None:
            continue
        spark_type = (types[i] if types is not None else None) or _infer_type(value)
        digest = _signed(xxhash.xxh64_intdigest(_value_bytes(value, spark_type), seed=digest & _MASK64))
    return digest


def key_group(values: Sequence[Any], groups: int, types: Sequence[str | None] | None = None) -> int:
    """The key group of one key (its column values, in the order given to `key_group_column`): Spark's
    `pmod(xxhash64(...), groups)`, in [0, groups)."""
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")
    return spark_xxhash64(values, types) % groups  # Python's % of a positive modulus is pmod


def key_group_column(*columns: str | Column, groups: int) -> Column:
    """The Spark Column `pmod(xxhash64(columns...), groups)` as an int (the key group of each row)."""
    from pyspark.sql import functions as sf

    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")
    if not columns:
        raise ValueError("key_group_column needs at least one key column")
    return sf.pmod(sf.xxhash64(*columns), sf.lit(groups)).cast("int")
