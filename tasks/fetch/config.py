"""config/fetch.toml as a typed model; URLs from config or GPUCOST_FETCH_<PROVIDER>_URL, keys from env vars."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.settings import ConfigError, Environment

PROVIDERS = ("azure", "aws", "aws-spot", "gcp", "lambda", "skypilot")


class FetchConfigError(ConfigError):
    """config/fetch.toml is wrong (one line naming the field)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class HttpPolicy(_Strict):
    connect_timeout_seconds: float = 15.0
    read_timeout_seconds: float = 120.0
    attempts: int = Field(4, ge=1)
    backoff_seconds: float = Field(2.0, ge=0)
    max_backoff_seconds: float = Field(60.0, ge=0)
    max_retry_after_seconds: float = Field(300.0, ge=0)
    max_pages: int = Field(2000, ge=1)
    # Bounds of one provider's fetch: its whole run (every request, retries and waits included), and each
    # download's size on the wire and on disk (after decompression). Exceeding one fails the provider with one
    # line; the prices it had before stay in the warehouse.
    provider_deadline_seconds: float = Field(1800.0, gt=0, allow_inf_nan=False)
    max_download_mb: float = Field(2048.0, gt=0, allow_inf_nan=False)
    max_file_mb: float = Field(4096.0, gt=0, allow_inf_nan=False)


class AzureConfig(_Strict):
    url: str
    filter: str


class AwsConfig(_Strict):
    url: str
    regions: list[str] = []
    offer_format: str = Field("csv", pattern="^(csv|json)$")


class AwsSpotConfig(_Strict):
    url: str = ""
    regions: list[str]
    instance_families: list[str]
    product_descriptions: list[str] = ["Linux/UNIX"]
    first_lookback_hours: float = Field(24.0, gt=0)


class GcpConfig(_Strict):
    url: str
    api_key_env: str
    page_size: int = Field(5000, ge=1)
    currency: str = "USD"


class LambdaConfig(_Strict):
    url: str = "https://cloud.lambda.ai/api/v1/instance-types"
    api_key_env: str = "GPUCOST_LAMBDA_API_KEY"
    regions: list[str] = []  # where a type with no capacity right now is priced (Lambda prices are not regional)


class SkypilotConfig(_Strict):
    url: str
    clouds: dict[str, str]


class FetchConfig(_Strict):
    enabled: bool = False
    providers: list[str] = list(PROVIDERS)
    keep_days: int = Field(14, ge=0)
    http: HttpPolicy = HttpPolicy()
    azure: AzureConfig
    aws: AwsConfig
    aws_spot: AwsSpotConfig = Field(alias="aws-spot")
    gcp: GcpConfig
    lambda_: LambdaConfig = Field(LambdaConfig(), alias="lambda")  # a fetch.toml from before [lambda] still loads
    skypilot: SkypilotConfig

    @field_validator("providers")
    @classmethod
    def _known_providers(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in PROVIDERS]
        if unknown:
            raise ValueError(f"unknown {', '.join(unknown)} (one of {', '.join(PROVIDERS)})")
        return names

    def base_url(self, provider: str) -> str:
        """The provider's base URL: GPUCOST_FETCH_<PROVIDER>_URL if set, else config/fetch.toml."""
        override = getattr(Environment.current(), f"fetch_{provider.replace('-', '_')}_url")
        return override or self.section(provider).url

    def section(self, provider: str) -> Any:
        return getattr(self, {"lambda": "lambda_"}.get(provider, provider.replace("-", "_")))


def url_variable(provider: str) -> str:
    return f"GPUCOST_FETCH_{provider.upper().replace('-', '_')}_URL"


def load_fetch_config() -> FetchConfig:
    """config/fetch.toml (tasks/config.py validates it: ConfigError in one line naming the key)."""
    from tasks.config import fetch

    return fetch()


def check_providers(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise FetchConfigError(f"unknown provider {', '.join(unknown)} (one of {', '.join(PROVIDERS)})")
    return names
