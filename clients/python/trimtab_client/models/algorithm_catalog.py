from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.algorithm_info import AlgorithmInfo


T = TypeVar("T", bound="AlgorithmCatalog")


@_attrs_define
class AlgorithmCatalog:
    """
    Attributes:
        algorithms (list[AlgorithmInfo]):
    """

    algorithms: list[AlgorithmInfo]

    def to_dict(self) -> dict[str, Any]:
        algorithms = []
        for algorithms_item_data in self.algorithms:
            algorithms_item = algorithms_item_data.to_dict()
            algorithms.append(algorithms_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "algorithms": algorithms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.algorithm_info import AlgorithmInfo  # noqa: PLC0415

        d = dict(src_dict)
        algorithms = []
        _algorithms = d.pop("algorithms")
        for algorithms_item_data in _algorithms:
            algorithms_item = AlgorithmInfo.from_dict(algorithms_item_data)

            algorithms.append(algorithms_item)

        algorithm_catalog = cls(
            algorithms=algorithms,
        )

        return algorithm_catalog
