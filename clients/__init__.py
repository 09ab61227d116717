"""Clients of the trimtab service; they talk to it over HTTP only."""
