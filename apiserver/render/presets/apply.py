"""``applyPresets`` of virt-api's VMI mutating webhook, applied to an expanded VM's template.

KubeVirt applies presets to a new VMI built from the template (labels and annotations of the template,
never of the VM). We model that VMI on ``spec.template`` and write the result back there. Where
KubeVirt's order is a Go map's (the preset list, a request map), we use name order, which is what the
golden cases record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.golang.gotext import aggregate
from apiserver.render.kubernetes.errors import CAUSE_INVALID, CAUSE_REQUIRED, Cause, ExpandError
from apiserver.render.presets.merge import (
    Conflict,
    RequestError,
    Sections,
    check_merge_conflicts,
    domain_path,
    merge_domain,
    sections_of,
    write_sections,
)
from apiserver.render.presets.report import (
    ANNOTATION_PREFIX,
    ANNOTATION_VALUE,
    EXCLUDE_ANNOTATION,
    PresetReport,
    admission_warnings,
    warning_for,
)
from apiserver.render.presets.selector import MalformedSelector, SelectorError, label_selector_as_selector

PRESET_KIND = "VirtualMachineInstancePreset"
DOMAIN_TYPE = "kubevirt.io/api/core/v1.DomainSpec"
TEMPLATE_TYPE = "kubevirt.io/api/core/v1.VirtualMachineInstanceTemplateSpec"
CONFLICTS_PREFIX = "VirtualMachinePresets cannot be applied due to conflicts: "


def preset_field(name: str, path: str = "") -> str:
    """Where a problem is, for Status causes: ``presets[<name>].<path inside the preset>``."""
    return f"presets[{name}]" + (f".{path}" if path else "")


@dataclass(slots=True)
class _Preset:
    name: str
    raw: Mapping[str, Any]


def _fail(vm_name: str, message: str, *causes: Cause) -> ExpandError:
    return ExpandError.invalid(message, *causes, name=vm_name)


def _as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def _namespace_presets(vm_name: str, namespace: str, presets: Sequence[Mapping[str, Any]]) -> list[_Preset]:
    """The presets KubeVirt's informer would list for the namespace, sorted by name."""
    listed: list[_Preset] = []
    for index, obj in enumerate(presets):
        if not isinstance(obj, Mapping):
            raise _fail(
                vm_name,
                f"VirtualMachineInstancePreset #{index} is not an object",
                Cause(f"presets[{index}]", "must be an object"),
            )
        kind = obj.get("kind")
        if kind is not None and kind != PRESET_KIND:
            continue
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            raise _fail(
                vm_name,
                f"VirtualMachineInstancePreset #{index} has no metadata.name",
                Cause(f"presets[{index}].metadata.name", "a preset must have a name", CAUSE_REQUIRED),
            )
        preset_ns = _as_mapping(meta).get("namespace")
        if namespace and isinstance(preset_ns, str) and preset_ns and preset_ns != namespace:
            continue
        listed.append(_Preset(name, obj))
    listed.sort(key=lambda p: p.name)
    return listed


def _spec(vm_name: str, preset: _Preset) -> Mapping[str, Any]:
    spec = preset.raw.get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        message = f"VirtualMachineInstancePreset '{preset.name}': spec must be an object"
        raise _fail(vm_name, message, Cause(preset_field(preset.name, "spec"), "must be an object"))
    return spec


def _matching(vm_name: str, listed: list[_Preset], labels: Mapping[str, str]) -> list[_Preset]:
    """``filterPresets``: any selector that does not convert fails everything, matching or not."""
    matched: list[_Preset] = []
    for preset in listed:
        try:
            selector = label_selector_as_selector(_spec(vm_name, preset).get("selector"))
        except SelectorError as exc:
            causes = [
                Cause(preset_field(preset.name, _join("spec.selector", p.where)), p.body)
                for p in exc.problems
            ]
            raise _fail(vm_name, exc.message, *causes) from None
        except MalformedSelector as exc:
            where = _join("spec.selector", exc.where)
            message = f"VirtualMachineInstancePreset '{preset.name}': {where} {exc.message}"
            raise _fail(vm_name, message, Cause(preset_field(preset.name, where), exc.message)) from None
        if selector.matches(labels):
            matched.append(preset)
    return matched


def _join(base: str, sub: str) -> str:
    if not sub:
        return base
    return f"{base}{sub}" if sub.startswith("[") else f"{base}.{sub}"


def _preset_sections(vm_name: str, preset: _Preset) -> Sections:
    """Decode a matching preset's domain as Go would, and take its mergeable sections."""
    domain = _spec(vm_name, preset).get("domain")
    if domain is None:
        # KubeVirt dereferences the nil domain and its webhook fails; we say why instead.
        message = (
            f"VirtualMachineInstancePreset '{preset.name}' matches but has no spec.domain: KubeVirt's VMI "
            "mutating webhook fails on it (nil pointer dereference), so the VM could not start"
        )
        cause = Cause(
            preset_field(preset.name, "spec.domain"), "Required value: missing domain.", CAUSE_REQUIRED
        )
        raise _fail(vm_name, message, cause)
    try:
        # exact_names: presets come from the API server, whose decoder matches member names exactly.
        normalized = gojson.roundtrip(domain, DOMAIN_TYPE, exact_names=True)
    except gojson.GoDecodeError as exc:
        where = _join("spec.domain", exc.path)
        message = f"VirtualMachineInstancePreset '{preset.name}': {where}: {exc.message}"
        raise _fail(
            vm_name, message, Cause(preset_field(preset.name, where), exc.message, CAUSE_INVALID)
        ) from None
    # Requests are read from the preset as written: Go compares the parsed text, not its canonical form.
    raw_requests = _as_mapping(_as_mapping(domain.get("resources")).get("requests"))
    try:
        sections = sections_of({**normalized, "resources": {"requests": dict(raw_requests)}})
    except RequestError as exc:
        where = f"spec.domain.resources.requests[{exc.key}]"
        message = f"VirtualMachineInstancePreset '{preset.name}': {where}: {exc}"
        raise _fail(vm_name, message, Cause(preset_field(preset.name, where), str(exc))) from None
    return sections


def _preset_conflicts(vm_name: str, presets: list[tuple[_Preset, Sections]]) -> None:
    """``checkPresetConflicts``: any conflict between two matching presets fails everything."""
    pairs: list[tuple[_Preset, _Preset, list[Conflict]]] = []
    for index, (later, later_sections) in enumerate(presets):
        for earlier, earlier_sections in presets[:index]:
            conflicts = check_merge_conflicts(later_sections, earlier_sections)
            if conflicts:
                pairs.append((later, earlier, conflicts))
    if not pairs:
        return
    texts = [
        f"presets '{later.name}' and '{earlier.name}' conflict: {aggregate(c.text for c in conflicts)}"
        for later, earlier, conflicts in pairs
    ]
    causes = [
        Cause(
            preset_field(later.name, "spec.domain." + domain_path(c.field)),
            f"presets '{later.name}' and '{earlier.name}' conflict: {c.text}",
        )
        for later, earlier, conflicts in pairs
        for c in conflicts
    ]
    raise _fail(vm_name, CONFLICTS_PREFIX + aggregate(texts), *causes)


def apply_presets(vm: dict[str, Any], presets: Sequence[Mapping[str, Any]]) -> PresetReport:
    """Apply the namespace's presets to ``vm["spec"]["template"]`` in place and report what happened.

    ``vm`` is an expanded VM in Go-encoded form; ``presets`` are preset objects as stored (any content).
    Raises :class:`ExpandError` (422) where KubeVirt would refuse to create the VMI: a selector that
    cannot be converted, two matching presets that conflict, or a matching preset without a domain.
    """
    metadata = _as_mapping(vm.get("metadata"))
    vm_name = metadata.get("name") if isinstance(metadata.get("name"), str) else ""
    namespace = metadata.get("namespace") if isinstance(metadata.get("namespace"), str) else ""
    spec = vm.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    if not isinstance(template, dict):
        raise _fail(
            str(vm_name),
            "presets apply to a VM's spec.template, and this VM has none",
            Cause("spec.template", "Required value", CAUSE_REQUIRED),
        )
    template_meta = _as_mapping(template.get("metadata"))
    labels = _string_map(template_meta.get("labels"))
    annotations = _string_map(template_meta.get("annotations"))
    report = PresetReport()

    if annotations.get(EXCLUDE_ANNOTATION) == "true":
        report.excluded = True
        report.admission_warnings = admission_warnings(annotations)
        return report

    listed = _namespace_presets(str(vm_name), str(namespace), presets)
    matched = _matching(str(vm_name), listed, labels)
    report.matched = [p.name for p in matched]
    if not matched:
        report.admission_warnings = admission_warnings(annotations)
        return report

    with_sections = [(p, _preset_sections(str(vm_name), p)) for p in matched]
    _preset_conflicts(str(vm_name), with_sections)

    template_spec = template.get("spec")
    if not isinstance(template_spec, dict):
        template_spec = template["spec"] = {}
    domain = template_spec.get("domain")
    if not isinstance(domain, dict):
        domain = template_spec["domain"] = {}
    vmi = sections_of(domain)
    applied_names: list[str] = []
    for preset, sections in with_sections:
        applied, conflicts = merge_domain(sections, vmi)
        if applied:
            applied_names.append(preset.name)
        warning = warning_for(preset.name, applied, [(c.field, c.text) for c in conflicts])
        if warning is not None:
            report.warnings.append(warning)

    write_sections(domain, vmi)
    if applied_names:
        new_annotations = dict(_as_mapping(template_meta.get("annotations")))
        for name in applied_names:
            new_annotations[ANNOTATION_PREFIX + name] = ANNOTATION_VALUE
        meta = template.get("metadata")
        if not isinstance(meta, dict):
            meta = template["metadata"] = {}
        meta["annotations"] = new_annotations
        annotations = _string_map(new_annotations)
    encoded = gojson.roundtrip(template, TEMPLATE_TYPE)
    template.clear()
    template.update(encoded)
    report.admission_warnings = admission_warnings(annotations)
    return report
