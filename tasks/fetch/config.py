"""config/fetch.toml as a typed model: the run's own keys and [http], then one section per registered provider
(tasks/providers/registry.py), each validated by that provider's config model. URLs come from the section or
GPUCOST_FETCH_<PROVIDER>_URL; keys from environment variables the sections name."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import Field, create_model, field_validator

from tasks import config
from tasks.fetch.http import HttpPolicy
from tasks.providers import registry
from tasks.providers.provider import Provider
from tasks.settings import ConfigError, Environment, Strict


class FetchConfigError(ConfigError):
    """config/fetch.toml is wrong (one line naming the field)."""


class FetchConfig(Strict):
    """config/fetch.toml, without the providers' sections (`fetch_config_model` adds them)."""

    enabled: bool = False
    providers: list[str] = []  # what `gpucost fetch` fetches (default: every registered provider with a fetcher)
    keep_days: int = Field(14, ge=0)
    http: HttpPolicy = HttpPolicy()

    @field_validator("providers")
    @classmethod
    def _known_providers(cls, names: list[str]) -> list[str]:
        known = [p.name for p in registry.fetchable()]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"unknown {', '.join(unknown)} (one of {', '.join(known)})")
        return names

    def section(self, provider: str) -> Any:
        """The provider's section, as its own config model."""
        return getattr(self, registry.provider(provider).section)

    def base_url(self, provider: str) -> str:
        """The provider's base URL: GPUCOST_FETCH_<PROVIDER>_URL if set, else config/fetch.toml."""
        return Environment.fetch_url(provider) or self.section(provider).url


def fetch_config_model() -> type[FetchConfig]:
    """FetchConfig with a section for each registered provider that fetches (required unless its model has a
    default for every key)."""
    return _model(tuple(registry.fetchable()))


@cache
def _model(providers: tuple[Provider, ...]) -> type[FetchConfig]:
    sections: dict[str, Any] = {}
    for p in providers:
        assert p.config is not None, f"provider {p.name} fetches but declares no config model"
        required = any(f.is_required() for f in p.config.model_fields.values())
        default = ... if required else p.config()
        sections[p.section] = (p.config, Field(default, alias=p.name))
    names = [p.name for p in providers]
    return create_model(
        "FetchConfig", __base__=FetchConfig, __module__=__name__,
        providers=(list[str], Field(default_factory=lambda: list(names))), **sections,
    )


def load_fetch_config() -> FetchConfig:
    """config/fetch.toml (ConfigError in one line naming the key)."""
    return config.load("fetch", fetch_config_model())


def check_providers(names: list[str]) -> list[str]:
    known = [p.name for p in registry.fetchable()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise FetchConfigError(f"unknown provider {', '.join(unknown)} (one of {', '.join(known)})")
    return names
