from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LargestLoadFirstParams")


@_attrs_define
class LargestLoadFirstParams:
    """Largest-load-first: the most loaded node gives its largest unit that lowers the peak to the least loaded.

    Attributes:
        name (Literal['largest-load-first'] | Unset):  Default: 'largest-load-first'.
    """

    name: Literal["largest-load-first"] | Unset = "largest-load-first"

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = cast(Literal["largest-load-first"] | Unset, d.pop("name", UNSET))
        if name != "largest-load-first" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'largest-load-first', got '{name}'")

        largest_load_first_params = cls(
            name=name,
        )

        return largest_load_first_params
