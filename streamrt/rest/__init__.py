"""The per-instance REST endpoint: metadata, interactive queries, member removal, metrics."""

from streamrt.rest.settings import RestSettings

__all__ = ("RestSettings",)
