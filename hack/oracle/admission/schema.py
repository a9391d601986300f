"""The schema stage: KubeVirt's OpenAPI validation of the whole VM (``apiserver/render/admission/schema.py``).
Its inputs are not variants here: hack/oracle/fuzz_admission.py derives them from the schema itself."""

from __future__ import annotations

from hack.oracle.admission.base import check, go_file


def checks() -> None:
    go_file("pkg/util/openapi/openapi.go", "schema")
    check("schema.top-level", "Validator.Validate", "", r"re:^\.[^.]* in body is a forbidden property$")
    check("schema.spec-required", "Validator.Validate", "", "re:^spec in body is required$")
    check(
        "schema.unknown-member",
        "ValidateSpec (go-openapi objectValidator)",
        "",
        r"re:^(spec|status)\..* in body is a forbidden property$",
    )
    check(
        "schema.required",
        "ValidateSpec (go-openapi objectValidator)",
        "",
        r"re:^(spec|status)\..* in body is required$",
    )
    check("schema.type", "ValidateSpec (go-openapi typeValidator)", "", "in body must be of type")
    check("schema.enum", "ValidateSpec (go-openapi enum)", "", "in body should be one of")
