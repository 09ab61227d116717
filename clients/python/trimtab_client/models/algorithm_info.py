from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.algorithm_info_parameters import AlgorithmInfoParameters


T = TypeVar("T", bound="AlgorithmInfo")


@_attrs_define
class AlgorithmInfo:
    """
    Attributes:
        name (str): The value of `algorithm.name` that selects it.
        needs (list[str]): Snapshot fields the algorithm reads beyond nodes and units.
        paper (str):
        parameters (AlgorithmInfoParameters): JSON schema of its `algorithm` object.
        summary (str):
    """

    name: str
    needs: list[str]
    paper: str
    parameters: AlgorithmInfoParameters
    summary: str

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        needs = self.needs

        paper = self.paper

        parameters = self.parameters.to_dict()

        summary = self.summary

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "needs": needs,
                "paper": paper,
                "parameters": parameters,
                "summary": summary,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.algorithm_info_parameters import AlgorithmInfoParameters  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        needs = cast(list[str], d.pop("needs"))

        paper = d.pop("paper")

        parameters = AlgorithmInfoParameters.from_dict(d.pop("parameters"))

        summary = d.pop("summary")

        algorithm_info = cls(
            name=name,
            needs=needs,
            paper=paper,
            parameters=parameters,
            summary=summary,
        )

        return algorithm_info
