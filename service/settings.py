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
        default=None,
        description="When set, every endpoint but /healthz needs 'Bearer <token>' (see open_readyz, open_metrics).",
    )
    max_body_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    pool_size: int = Field(default=2, ge=1, description="Solver calls running at once.")
    queue_size: int = Field(
        default=30,
        ge=0,
        description="Solver calls waiting (each bounded by its deadline); beyond that the answer is 503.",
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
    max_node_values: int = Field(
        default=4_000_000,
        ge=1,
        description="Cap on nodes x windows (one load series per node in the statistics and the validator).",
    )
    deadline_slack_s: float = Field(
        default=1.0,
        gt=0,
        description="A plan request answers within time_limit_s plus this (parse, solve, validate, serialize); "
        "a worker still busy then is killed and replaced, and the caller gets 503.",
    )
    worker_memory_mb: int = Field(
        default=4096, ge=0, description="Address space a solver worker may add (RLIMIT_AS); 0: unlimited."
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, description="A request body must arrive within this (slow uploads get 408)."
    )
    request_head_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="A connection must send each whole request head (request line and headers) within this, from "
        "its opening or the end of its last answer (else 408 and closed; slowloris).",
    )
    http_parser: Literal["httptools", "h11"] = Field(
        default="httptools",
        description="The HTTP/1.1 parser of `python -m service.server`: httptools (uvicorn's C parser, llhttp) or h11 "
        "(pure Python: about 0.15 ms more CPU a request).",
    )
    body_idle_timeout_s: float = Field(
        default=10.0, gt=0, description="At most this long between two chunks of a request body (else 408)."
    )
    max_buffered_body_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description="Request bodies held at once, all requests together (at least max_body_bytes); beyond: 503.",
    )
    inline_small_plans: bool = Field(
        default=True,
        description="Plan small requests (service.planning.is_small) in the service process under a watchdog instead "
        "of a worker process (cheaper; see service.inline).",
    )
    otel: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="FastAPI's own OpenTelemetry spans, metrics and logs (service.telemetry.fastapi_telemetry): on, "
        "off, or auto: on when a provider is configured when the app is created or FASTAPI_OTEL_AUTO_CONFIGURE is "
        "true.",
    )
    open_readyz: bool = Field(default=False, description="With a token set: /readyz answers without it.")
    open_metrics: bool = Field(default=False, description="With a token set: /metrics answers without it.")


@lru_cache
def get_settings() -> Settings:
    return Settings()
