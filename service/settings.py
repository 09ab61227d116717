"""Service settings, from the environment (prefix TRIMTAB_) or a .env file."""

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRIMTAB_", env_file=".env", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    auth_token: str | None = Field(
        default=None, description="When set, every /v1 call needs 'Bearer <token>'."
    )
    max_body_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    pool_size: int = Field(default=2, ge=1, description="Solver calls running at once.")
    queue_size: int = Field(
        default=4, ge=0, description="Solver calls waiting; beyond that the answer is 503."
    )
    default_time_limit_s: float = Field(default=2.0, gt=0)
    max_time_limit_s: float = Field(default=60.0, gt=0)
    max_units: int = Field(default=250_000, ge=1)
    max_nodes: int = Field(default=10_000, ge=1)
    retry_after_s: int = Field(default=1, ge=1)
    workers: int = Field(
        default=1, ge=1, le=64, description="uvicorn worker processes (`trimtab serve`, the docker image)."
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="Level of the JSON logs on stderr."
    )
    validate_plans: bool = Field(
        default=True, description="Run the independent plan validator on every plan."
    )


@lru_cache
def get_settings() -> Settings:
    return Settings()
