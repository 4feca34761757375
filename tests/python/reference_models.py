"""Validates answers of wearhouse against the reference's published models (tests/it/lab/shapes.rs).

Usage: reference_models.py SCHEMAS_JSON < cases.json

SCHEMAS_JSON is the reference's OpenAPI components (testdata/reference/, with its source and
version). The input is a JSON list of {"name", "component", "answer", "sdk_model"?}: each answer is
validated against the component (JSON Schema 2020-12, the OpenAPI 3.1 dialect, every member and
nested model checked; the components' "required" lists included) with jsonschema_rs, and, when
"sdk_model" names a class of `vital.types`, parsed by the reference SDK's pydantic model too.
Prints one JSON line: {"checked": n, "failures": [{"name", "errors"}]}; exits 1 on any failure.
"""

import json
import sys

import jsonschema_rs
import vital.types

components = json.load(open(sys.argv[1]))["components"]
cases = json.load(sys.stdin)
failures = []
for case in cases:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": f"#/components/schemas/{case['component']}",
        "components": components,
    }
    validator = jsonschema_rs.Draft202012Validator(schema)
    errors = [f"{list(e.instance_path)}: {e.message}" for e in validator.iter_errors(case["answer"])]
    model = case.get("sdk_model")
    if model:
        try:
            getattr(vital.types, model).model_validate(case["answer"])
        except Exception as e:  # noqa: BLE001 - any parse failure is reported
            errors.append(f"vital.types.{model}: {e}")
    if errors:
        failures.append({"name": case["name"], "errors": errors[:20]})
print(json.dumps({"checked": len(cases), "failures": failures}))
sys.exit(1 if failures else 0)
