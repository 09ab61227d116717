"""Wire models of trimtab: the pydantic models here are the single source of truth for the OpenAPI schema."""
