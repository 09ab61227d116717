"""Write (or with --check, verify) schemas/openapi.json: the OpenAPI document generated from the pydantic models.

The models are the source of truth; the JSON file is committed so engines can generate clients without running
the service, and `make test` fails when it is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

OPENAPI_PATH = Path(__file__).with_name("openapi.json")


def render() -> str:
    from service.main import create_app
    from service.settings import Settings

    return json.dumps(create_app(Settings()).openapi(), indent=2, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed file is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OPENAPI_PATH.exists() or OPENAPI_PATH.read_text() != text:
            print("schemas/openapi.json is stale: run `make openapi` and commit it", file=sys.stderr)
            return 1
        print("schemas/openapi.json is up to date")
        return 0
    OPENAPI_PATH.write_text(text)
    print(f"wrote {OPENAPI_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
