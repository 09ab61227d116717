"""Schemathesis: requests generated from our own OpenAPI document, valid and invalid, against the ASGI app.

Every answer must conform to the documented responses (status codes, content types, schemas) and none may be a 500;
invalid requests must be rejected. `positive_data_acceptance` is left out on purpose: schema-valid snapshots can
still break cross-field rules no JSON schema states (a unit on an unknown node, every node draining), and those get
422 by design. Time limits are capped low so that the generated snapshots solve fast; examples are bounded.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from service.main import create_app
from service.settings import Settings

# The deadline slack is wide: this test checks conformance, not deadlines (tests/test_reliability_service.py does),
# and a 10,000-node body parsed on a machine busy with other work can take longer than the default 1 s.
app = create_app(Settings(default_time_limit_s=0.1, max_time_limit_s=0.2, deadline_slack_s=10.0))
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_conforms_to_its_schema_and_never_fails(case: schemathesis.Case) -> None:
    case.call_and_validate(excluded_checks=[positive_data_acceptance])
