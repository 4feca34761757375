"""Validates FHIR R4 Bundles of Observations against HL7's FHIR R4 JSON schema.

Usage: fhir_validate.py <fhir.schema.json>, with a JSON array of Bundles on standard input.
Each Bundle is validated against the whole schema (its root `oneOf` over every resource type,
so entries are validated as the resources they say they are), and each entry's resource
against the schema's `Observation` definition too, for precise messages. As a control, two
deliberately broken copies of the first Observation (a time without an offset, an unknown
status) must be rejected: a validator that accepts everything fails this script.

Prints {"bundles": n, "observations": n, "errors": [...]} and exits 1 when any error is found.
The validator is jsonschema_rs (tests/python/requirements.txt), a full JSON Schema
implementation; the FHIR schema is draft-06.
"""

import copy
import json
import sys

import jsonschema_rs


def messages(validator, instance, where):
    return [f"{where}: {e.message[:300]} at {list(e.instance_path)}" for e in validator.iter_errors(instance)]


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    bundles = json.load(sys.stdin)
    whole = jsonschema_rs.validator_for(schema)
    observation = jsonschema_rs.validator_for(
        {
            "$schema": schema["$schema"],
            "$ref": "#/definitions/Observation",
            "definitions": schema["definitions"],
        }
    )
    errors = []
    count = 0
    first = None
    for i, bundle in enumerate(bundles):
        errors += messages(whole, bundle, f"bundle {i}")
        for j, entry in enumerate(bundle.get("entry", [])):
            resource = entry.get("resource")
            count += 1
            first = first or resource
            errors += messages(observation, resource, f"bundle {i} entry {j}")
    if first is None:
        errors.append("no Observation to validate")
    else:
        no_offset = copy.deepcopy(first)
        no_offset["effectivePeriod"] = {"start": "2025-03-01T08:00:00"}
        bad_status = copy.deepcopy(first)
        bad_status["status"] = "done"
        for name, broken in (("no offset", no_offset), ("bad status", bad_status)):
            if observation.is_valid(broken):
                errors.append(f"control '{name}' was accepted: the validator checks nothing")
    print(json.dumps({"bundles": len(bundles), "observations": count, "errors": errors}))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
