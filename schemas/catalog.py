"""GET /v1/algorithms: what each algorithm does and needs (a named model, so generated clients get typed fields)."""

from typing import Any

from pydantic import Field

from schemas.common import ResponseModel


class AlgorithmInfo(ResponseModel):
    name: str = Field(description="The value of `algorithm.name` that selects it.")
    summary: str
    paper: str
    needs: list[str] = Field(description="Snapshot fields the algorithm reads beyond nodes and units.")
    parameters: dict[str, Any] = Field(description="JSON schema of its `algorithm` object.")


class AlgorithmCatalog(ResponseModel):
    algorithms: list[AlgorithmInfo]
